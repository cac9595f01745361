"""A real S3 server on loopback for the object-store tests (issue 45): moto's
server, with the bucket(s) named on the command line created. Prints the
endpoint URL on its first line, then serves until its stdin closes (so it never
outlives the test that started it).

    python s3_server.py BUCKET [BUCKET ...]
"""

import socket
import sys

import boto3
from moto.server import ThreadedMotoServer

KEYS = {"aws_access_key_id": "rollway-test", "aws_secret_access_key": "rollway-test", "region_name": "us-east-1"}


def free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def main() -> None:
    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    url = f"http://127.0.0.1:{port}"
    client = boto3.client("s3", endpoint_url=url, **KEYS)
    for bucket in sys.argv[1:]:
        client.create_bucket(Bucket=bucket)
    print(url, flush=True)
    sys.stdin.read()
    server.stop()


if __name__ == "__main__":
    main()
