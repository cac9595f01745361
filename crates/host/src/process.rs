//! One env process, seen from the worker thread that owns it: spawned as
//! `python -m rollway._host`, talked to through its stdin and stdout, and always
//! reaped. The process is its own process group, so a Ctrl-C at the terminal
//! reaches only the run (which then shuts its processes down in order), and it is
//! killed by the kernel if the run's process goes away first, so neither a crash
//! nor a kill of the run leaves an orphan stepping envs.
//!
//! The kernel's parent-death signal fires when the *thread* that forked a child
//! ends, not its process, and a process may change hands between threads (the one
//! that read a factory's spec becomes a block's, `target.rs`). So every env process
//! is forked by one thread that lives as long as the run's process ([`spawn`]);
//! a block's own process still goes when its block is dropped.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::collections::HashSet;
use std::io::{self, BufReader};
use std::os::fd::AsFd;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::mpsc::{self, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use rustix::event::{poll, PollFd, PollFlags};

use crate::proto;

/// Why a reply did not come.
#[derive(Debug)]
pub(crate) enum Gone {
    /// The process ended (or closed its end); how, in words.
    Died(String),
    /// No reply within the limit; the process was killed.
    TimedOut(Duration),
}

impl std::fmt::Display for Gone {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Gone::Died(how) => write!(f, "it {how}"),
            Gone::TimedOut(t) => write!(f, "no answer within {t:?}"),
        }
    }
}

/// The unreaped processes of one env factory, by pid, for [`kill_all`]. A pid leaves
/// the set before its process is reaped (under the lock `kill_all` holds), so a
/// signal never reaches a process that merely reuses the pid.
pub(crate) type Live = Arc<Mutex<HashSet<u32>>>;

/// Kills every process in `live` (they fail their rounds and are reaped by their owners).
pub(crate) fn kill_all(live: &Live) {
    let live = live.lock().unwrap_or_else(|e| e.into_inner());
    for &pid in live.iter() {
        if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
            let _ = rustix::process::kill_process(pid, rustix::process::Signal::KILL);
        }
    }
}

pub(crate) struct Process {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    live: Live,
}

impl Process {
    pub fn spawn(python: &Path, live: &Live) -> io::Result<Process> {
        let mut cmd = Command::new(python);
        cmd.args(["-m", "rollway._host"]).stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::inherit()).process_group(0);
        // SAFETY: the closure runs in the forked child before exec and only makes
        // one system call (prctl), which is async-signal-safe and allocates nothing.
        unsafe {
            cmd.pre_exec(|| rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::KILL)).map_err(io::Error::from));
        }
        let mut child =
            spawn(cmd).map_err(|e| io::Error::new(e.kind(), format!("starting `{} -m rollway._host`: {e}", python.display())))?;
        let stdin = child.stdin.take().expect("piped");
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        live.lock().unwrap_or_else(|e| e.into_inner()).insert(child.id());
        Ok(Process { child, stdin: Some(stdin), stdout, live: live.clone() })
    }

    pub fn id(&self) -> u32 {
        self.child.id()
    }

    pub fn send(&mut self, payload: &[u8]) -> Result<(), Gone> {
        let stdin = self.stdin.as_mut().ok_or_else(|| Gone::Died("its input is closed".into()))?;
        proto::write_frame(stdin, payload).map_err(|_| self.died())
    }

    /// The next reply frame, waiting at most `timeout` for it to start.
    pub fn recv(&mut self, timeout: Option<Duration>) -> Result<Vec<u8>, Gone> {
        if let Some(limit) = timeout {
            if self.stdout.buffer().is_empty() && !self.readable_within(limit) {
                self.kill();
                return Err(Gone::TimedOut(limit));
            }
        }
        match proto::read_frame(&mut self.stdout) {
            Ok(Some(frame)) => Ok(frame),
            _ => Err(self.died()),
        }
    }

    fn readable_within(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let ts = rustix::event::Timespec { tv_sec: left.as_secs() as i64, tv_nsec: left.subsec_nanos() as _ };
            let fd = self.stdout.get_ref().as_fd();
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            match poll(&mut fds, Some(&ts)) {
                Ok(0) => return false,
                Ok(_) => return true,
                Err(rustix::io::Errno::INTR) if !left.is_zero() => continue,
                Err(_) => return true,
            }
        }
    }

    /// Takes the process out of the live set: from now on it may be reaped.
    fn release(&mut self) {
        self.live.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.child.id());
    }

    /// The process is gone or going: reap it and say how it ended.
    fn died(&mut self) -> Gone {
        self.stdin = None;
        self.release();
        let status = match self.child.try_wait() {
            Ok(Some(s)) => Some(s),
            // It closed its pipe but may still be exiting: give it a moment, then make sure.
            _ => {
                std::thread::sleep(Duration::from_millis(50));
                self.kill()
            }
        };
        Gone::Died(status.map_or_else(|| "closed its pipe".into(), describe))
    }

    fn kill(&mut self) -> Option<ExitStatus> {
        self.stdin = None;
        self.release();
        let _ = self.child.kill();
        self.child.wait().ok()
    }

    /// Asks the process to close its envs and exit; kills it if it has not within `grace`.
    pub fn stop(&mut self, grace: Duration) {
        if self.stdin.is_some() {
            let _ = self.send(&[proto::QUIT]);
        }
        self.stdin = None;
        self.release();
        let deadline = Instant::now() + grace;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        self.kill();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop(Duration::from_secs(2));
    }
}

type Spawn = (Command, Sender<io::Result<Child>>);

/// Runs `cmd.spawn()` on the forking thread (see the module docs), started on first use
/// and again in a forked copy of this process, which has no such thread.
fn spawn(cmd: Command) -> io::Result<Child> {
    static FORKER: OnceLock<Mutex<(u32, Sender<Spawn>)>> = OnceLock::new();
    let start = || {
        let (tx, rx) = mpsc::channel::<Spawn>();
        std::thread::Builder::new().name("rollway-forker".into()).spawn(move || {
            for (mut cmd, reply) in rx {
                let _ = reply.send(cmd.spawn());
            }
        })?;
        Ok::<_, io::Error>((std::process::id(), tx))
    };
    let forker = match FORKER.get() {
        Some(f) => f,
        None => {
            let made = start()?;
            FORKER.get_or_init(|| Mutex::new(made))
        }
    };
    let mut forker = forker.lock().unwrap_or_else(|e| e.into_inner());
    if forker.0 != std::process::id() {
        *forker = start()?;
    }
    let (reply, child) = mpsc::channel();
    forker.1.send((cmd, reply)).map_err(|_| io::Error::other("the env processes' forking thread is gone"))?;
    drop(forker);
    child.recv().map_err(|_| io::Error::other("the env processes' forking thread is gone"))?
}

/// "exit status 3", "killed by signal 9 (SIGKILL)".
pub(crate) fn describe(s: ExitStatus) -> String {
    match (s.code(), s.signal()) {
        (Some(c), _) => format!("exited with status {c}"),
        (None, Some(sig)) => format!("killed by signal {sig}{}", signal_name(sig).map(|n| format!(" ({n})")).unwrap_or_default()),
        _ => format!("{s}"),
    }
}

fn signal_name(sig: i32) -> Option<&'static str> {
    Some(match sig {
        6 => "SIGABRT",
        9 => "SIGKILL",
        11 => "SIGSEGV",
        15 => "SIGTERM",
        _ => return None,
    })
}
