//! Live progress: an indicatif bar on a terminal, plain log lines otherwise, for a
//! run ([`Display`], a stage of [`crate::Sinks`]) and for the dataset commands
//! ([`Bar`]).

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressStyle};
use rollway_runner::{Progress, SinkError, Target};

/// A run stopped because its caller asked (Ctrl-C in Python).
#[derive(Debug)]
pub struct Interrupted;

impl std::fmt::Display for Interrupted {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interrupted; the episodes committed so far are kept and the run can be resumed")
    }
}

impl std::error::Error for Interrupted {}

/// How often progress is logged when stderr is not a terminal.
pub const LOG_EVERY: Duration = Duration::from_secs(30);

/// Shows a run's progress, asks its caller whether to stop, and keeps its timeline.
pub struct Display<'a> {
    bar: Option<ProgressBar>,
    log_every: Option<Duration>,
    last_log: Instant,
    /// Asked at every progress tick; `true` stops the run.
    pub stop: Option<Box<dyn FnMut() -> bool + 'a>>,
    /// Progress over time, stored with the run's summary for `rollway report`.
    pub timeline: Timeline,
    /// The store the run pushes to: its trouble goes on the progress line, and is said
    /// once on stderr when it begins and when it ends, even when quiet.
    pub store: Option<rollway_remote::StoreHealth>,
    troubled: bool,
}

/// Progress samples `[seconds, steps acted, episodes]` — steps acted count
/// running episodes too (`Progress::acted`), so the pace shows while long episodes
/// are still going — at least `Timeline::FIRST` apart and at most
/// `Timeline::MAX` of them: when full, every other sample is dropped and the
/// spacing doubles, so a run of any length keeps an even record in a few kB.
#[derive(Default)]
pub struct Timeline {
    samples: Vec<[f64; 3]>,
    last: [f64; 3],
    every: f64,
}

impl Timeline {
    const FIRST: f64 = 0.05;
    const MAX: usize = 400;

    /// Takes in one progress report (kept: the latest, and samples spaced out over the run).
    pub fn record(&mut self, p: &Progress) {
        let t = p.elapsed.as_secs_f64();
        self.last = [t, p.acted as f64, p.episodes as f64];
        if self.samples.last().is_some_and(|l| t - l[0] < self.every.max(Self::FIRST)) {
            return;
        }
        if self.samples.len() == Self::MAX {
            let kept: Vec<[f64; 3]> = self.samples.iter().step_by(2).copied().collect();
            self.samples = kept;
            self.every = self.every.max(Self::FIRST) * 2.0;
        }
        self.samples.push(self.last);
    }

    /// The samples, ending with the run's last progress at its end, `seconds`.
    pub fn finish(&mut self, seconds: f64, episodes: u64) -> Vec<[f64; 3]> {
        let mut out = std::mem::take(&mut self.samples);
        out.push([seconds.max(self.last[0]), self.last[1], episodes as f64]);
        out
    }
}

impl Display<'_> {
    /// Progress toward `target`, drawn on a terminal unless `quiet`.
    pub fn new(target: Target, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        let bar = (!quiet && tty).then(|| {
            let (len, unit) = match target {
                Target::Episodes(n) => (n, "episodes"),
                Target::Steps(n) => (n, "steps"),
            };
            let pb = ProgressBar::new(len);
            let tpl = format!("{{spinner}} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} {unit} {{msg}}");
            pb.set_style(ProgressStyle::with_template(&tpl).expect("static template").progress_chars("=> "));
            pb
        });
        // Off a terminal (a log file, CI) a line now and then says how far the run is
        // and how long it still needs; often enough to see it move, rare enough to read.
        let log_every = (!quiet && !tty).then_some(LOG_EVERY);
        Display { bar, log_every, last_log: Instant::now(), stop: None, timeline: Timeline::default(), store: None, troubled: false }
    }

    /// Clears the bar.
    pub fn finish(&mut self) {
        if let Some(b) = &self.bar {
            b.finish_and_clear();
        }
    }

    /// A progress tick: stops the run when the caller asks, else records and shows it.
    pub fn tick(&mut self, p: &Progress) -> Result<(), SinkError> {
        if self.stop.as_mut().is_some_and(|stop| stop()) {
            return Err(Box::new(Interrupted));
        }
        self.timeline.record(p);
        let rate = p.steps as f64 / p.elapsed.as_secs_f64().max(1e-9);
        let trouble = self.store_trouble();
        let msg = format!(
            "{} ep, {}/s steps{}{}",
            p.episodes,
            human(rate),
            if p.restarts > 0 { format!(", {} restarts", p.restarts) } else { String::new() },
            trouble.map_or(String::new(), |t| format!(", store trouble: {t}"))
        );
        let (pos, len, unit) = match p.target {
            Target::Episodes(n) => (p.episodes, n, "episodes"),
            Target::Steps(n) => (p.steps, n, "steps"),
        };
        if let Some(b) = &self.bar {
            b.set_position(pos);
            b.set_message(msg);
        } else if let Some(every) = self.log_every {
            if self.last_log.elapsed() >= every {
                self.last_log = Instant::now();
                let t = p.elapsed.as_secs_f64();
                let share = pos as f64 / len.max(1) as f64;
                let eta = if pos > 0 { format!(", about {:.0} s to go", t * (1.0 - share) / share) } else { String::new() };
                eprintln!("rollway: {t:.0} s: {pos}/{len} {unit} ({:.0}%), {msg}{eta}", 100.0 * share);
            }
        }
        Ok(())
    }

    /// The store's trouble now, said on stderr when it begins and when it ends.
    fn store_trouble(&mut self) -> Option<String> {
        let store = self.store.as_ref()?;
        let trouble = store.trouble();
        let say = |line: String| match &self.bar {
            Some(b) => b.suspend(|| eprintln!("{line}")),
            None => eprintln!("{line}"),
        };
        match (&trouble, self.troubled) {
            (Some(t), false) => say(format!("rollway: warning: {t}")),
            (None, true) => say(format!("rollway: the store answers again: {}", store.url())),
            _ => {}
        }
        self.troubled = trouble.is_some();
        trouble
    }
}

/// A bar on a terminal, nothing otherwise (for commands that are short or print their
/// own summary): `verb [elapsed] ===>   done/total unit`.
pub struct Bar(Option<ProgressBar>);

impl Bar {
    /// A bar saying `verb`, counting `unit`s, on a terminal unless `quiet`.
    pub fn new(quiet: bool, verb: &str, unit: &str) -> Bar {
        Bar((!quiet && std::io::stderr().is_terminal()).then(|| {
            let pb = ProgressBar::new(0);
            let tpl = format!("{{spinner}} {verb} [{{elapsed_precise}}] {{wide_bar}} {{human_pos}}/{{human_len}} {unit} {{msg}}");
            pb.set_style(ProgressStyle::with_template(&tpl).expect("static template").progress_chars("=> "));
            pb
        }))
    }

    /// `done` of `total`.
    pub fn update(&self, done: u64, total: u64) {
        if let Some(b) = &self.0 {
            b.set_length(total);
            b.set_position(done);
        }
    }

    /// Text after the count.
    pub fn message(&self, msg: String) {
        if let Some(b) = &self.0 {
            b.set_message(msg);
        }
    }
}

impl Drop for Bar {
    fn drop(&mut self) {
        if let Some(b) = &self.0 {
            b.finish_and_clear();
        }
    }
}

/// `12.3M`, `4.5k`.
pub fn human(x: f64) -> String {
    match x {
        x if x >= 1e9 => format!("{:.2}G", x / 1e9),
        x if x >= 1e6 => format!("{:.2}M", x / 1e6),
        x if x >= 1e3 => format!("{:.1}k", x / 1e3),
        x => format!("{x:.1}"),
    }
}
