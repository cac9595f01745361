//! `rollway`: flags → library calls (see the `rollway_cli` library). Exit codes
//! (listed in `--help`): 0 ok, 1 the work failed, 2 usage or input error.
#![forbid(unsafe_code)]

fn main() -> std::process::ExitCode {
    rollway_cli::cli_main()
}
