//! [`Hosted`]: an env block whose envs live in one Python process.
//!
//! The process is started on the block's first round and again after it died
//! (crashed, was killed, or ran past `step_timeout` and was killed by us). A death
//! fails every op of the round it happened in, counted as one restart; the
//! episodes of those slots start over from their seeds, in a fresh process.
//!
//! A round is started (ops and actions into the shared memory, one byte down the
//! pipe) and finished (the reply read, results out of the shared memory) apart, so
//! that one thread can start the rounds of several processes and then read them.

use std::sync::Arc;
use std::time::Instant;

use rollway_core::{BlockOptions, EnvBlock, Failure, Info, InfoNeed, Op, Rows, SlotResult, StepOutcome};

use crate::process::{Gone, Process};
use crate::proto::{self, RoundReply};
use crate::shm::{self, Region};
use crate::target::Target;

pub(crate) struct Hosted {
    target: Arc<Target>,
    n: usize,
    options: BlockOptions,
    live: Option<(Process, Region)>,
    last_info: Vec<Info>,
    /// The round started and not yet finished: when it was sent, or why it could not be.
    round: Option<Result<Instant, String>>,
    /// The process was launched and its hello is still to be read (before the round's reply).
    greeting: bool,
    /// The shared memory's name until the process has mapped it (removed when dropped).
    shm_name: Option<tempfile::TempPath>,
}

impl Hosted {
    pub fn new(target: Arc<Target>, n: usize, options: BlockOptions) -> Hosted {
        Hosted { target, n, options, live: None, last_info: vec![Info::new(); n], round: None, greeting: false, shm_name: None }
    }

    /// Launches the process: its hello is read when the first round finishes, so the
    /// processes of several blocks start up at once.
    fn spawn(&mut self) -> Result<(), String> {
        let (ab, ob) = self.target.row_bytes()?;
        let (region, path) = Region::create(self.n, ab, ob).map_err(|e| format!("creating the shared memory of an env block: {e}"))?;
        let infos = match self.options.infos {
            InfoNeed::None => "none",
            InfoNeed::Final => "final",
            InfoNeed::All => "all",
        };
        let process = self.target.launch(self.n, Some(&path.to_string_lossy()), infos, self.options.cut)?;
        // The name goes once the process has mapped the region, which its hello says.
        self.live = Some((process, region));
        self.greeting = true;
        self.shm_name = Some(path);
        Ok(())
    }

    /// Reads the launched process's hello; its error fails the round.
    fn greet(&mut self) -> Result<(), String> {
        self.greeting = false;
        let (process, _) = self.live.as_mut().expect("launched");
        let greeted = self.target.greet(process).map(|_| ());
        // Mapped on both sides now (or never to be): the name is no longer needed, and gone it cannot leak.
        self.shm_name = None;
        greeted
    }

    /// Fails every op of the round: the first counts as the restart.
    fn fail_all(&mut self, ops: &[(usize, Op)], error: String, out: &mut Vec<SlotResult>) {
        (self.live, self.greeting, self.shm_name) = (None, false, None);
        out.extend(ops.iter().enumerate().map(|(i, _)| Err(Failure { error: error.clone(), restarted: i == 0 })));
    }
}

impl EnvBlock for Hosted {
    fn run(&mut self, ops: &[(usize, Op)], act: &Rows, obs: &mut Rows, out: &mut Vec<SlotResult>) {
        self.start(ops, act);
        self.finish(ops, obs, out);
    }

    fn steps_apart(&self) -> bool {
        true
    }

    fn start(&mut self, ops: &[(usize, Op)], act: &Rows) {
        if self.live.is_none() {
            if let Err(e) = self.spawn() {
                self.round = Some(Err(e));
                return;
            }
        }
        let (process, region) = self.live.as_mut().expect("started");
        region.ops_mut().fill(shm::IDLE);
        for &(slot, op) in ops {
            match op {
                Op::Step => {
                    region.ops_mut()[slot] = shm::STEP;
                    region.act_mut(slot).copy_from_slice(act.row(slot));
                }
                Op::Reset(Some(seed)) => {
                    region.ops_mut()[slot] = shm::RESET;
                    region.set_seed(slot, seed);
                }
                Op::Reset(None) => region.ops_mut()[slot] = shm::RESET_UNSEEDED,
            }
        }
        let pid = process.id();
        self.round = Some(process.send(&[proto::ROUND]).map(|()| Instant::now()).map_err(|gone| gone_why(gone, pid)));
    }

    fn finish(&mut self, ops: &[(usize, Op)], obs: &mut Rows, out: &mut Vec<SlotResult>) {
        out.clear();
        let Some(round) = self.round.take() else {
            return self.fail_all(ops, "a round finished that was not started".into(), out);
        };
        // A new process's round counts from its hello: importing and making its envs is not a step.
        let round = match self.greeting {
            true => self.greet().and(round.map(|_| Instant::now())),
            false => round,
        };
        let sent = match round {
            Ok(sent) => sent,
            Err(why) => return self.fail_all(ops, why, out),
        };
        let (process, region) = self.live.as_mut().expect("started");
        // The step timeout counts from the round's start, however late it is read.
        let left = self.options.step_timeout.map(|t| t.saturating_sub(sent.elapsed()));
        let frame = match process.recv(left) {
            Ok(frame) => frame,
            Err(gone) => {
                // Said as the limit set, not what was left of it when the reply was read.
                let gone = match (gone, self.options.step_timeout) {
                    (Gone::TimedOut(_), Some(limit)) => Gone::TimedOut(limit),
                    (gone, _) => gone,
                };
                let why = gone_why(gone, process.id());
                return self.fail_all(ops, why, out);
            }
        };
        let mut reply: RoundReply = match frame.is_empty() {
            true => RoundReply::default(),
            false => match serde_json::from_slice(&frame) {
                Ok(r) => r,
                Err(e) => return self.fail_all(ops, format!("the env process sent a malformed reply: {e}"), out),
            },
        };
        for &(slot, _) in ops {
            self.last_info[slot] = reply.infos.remove(&slot).unwrap_or_default();
            let flags = region.flags()[slot];
            if flags & shm::FAILED != 0 {
                let error = reply.errors.remove(&slot).unwrap_or_else(|| "the env raised".into());
                out.push(Err(Failure { error, restarted: true }));
                continue;
            }
            obs.row_mut(slot).copy_from_slice(region.obs(slot));
            out.push(Ok(StepOutcome {
                reward: region.reward(slot),
                terminated: flags & shm::TERMINATED != 0,
                truncated: flags & shm::TRUNCATED != 0,
            }));
        }
    }

    fn info(&mut self, slot: usize) -> Info {
        self.last_info[slot].clone()
    }
}

/// Why a round's process is gone, for the slots' failures.
fn gone_why(gone: Gone, pid: u32) -> String {
    match gone {
        Gone::Died(how) => format!("the env process (pid {pid}) died: {how}"),
        Gone::TimedOut(t) => format!("env steps took longer than step_timeout ({t:?}); the env process (pid {pid}) was killed"),
    }
}
