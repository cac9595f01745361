//! AV1 encoding with SVT-AV1 (`libsvtav1`), the encoder LeRobot writes its videos
//! with. Decoding goes through [`crate::video::Decoder`] (dav1d).
//!
//! SVT-AV1 (1.4, Debian 12's) refuses frames under 64 pixels a side; those go to
//! libaom instead, at its fastest setting, which takes any even size. Both write
//! plain AV1 in yuv420p, which every AV1 decoder reads.
//!
//! Cost: SVT-AV1 spends more time per frame than x264 at the same quality, and it
//! does so on one thread per encoder here (`lp=1`), like the H.264 encoder, so that
//! episodes encode in parallel on the encoder pool rather than one encoder taking
//! every core in turn.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::sync::Mutex;

use ff::Dictionary;
use ffmpeg_next as ff;

use crate::video::{self, Codec, Encoded, Setup};
use crate::Result;

/// Encoder settings. The defaults are LeRobot's (`encode_video_frames`: CRF 30, preset 12,
/// a keyframe every 2 frames, so a training loader reaches any frame cheaply).
#[derive(Clone, Debug, PartialEq)]
pub struct Av1Options {
    /// Constant rate factor (0–63, lower = better quality).
    pub crf: u32,
    /// SVT-AV1 preset (0 slowest … 13 fastest).
    pub preset: u32,
    /// Maximum frames between keyframes.
    pub keyint: u32,
    /// Frames per second written in the container.
    pub fps: u32,
}

impl Default for Av1Options {
    fn default() -> Self {
        Av1Options { crf: 30, preset: 12, keyint: 2, fps: 30 }
    }
}

/// The smallest width and height SVT-AV1 encodes.
const SVT_MIN: usize = 64;

/// Held while an SVT-AV1 encoder opens or closes. Why: SVT-AV1 (1.4) keeps a process-wide
/// table of processor groups that opening an encoder allocates and fills and closing one frees,
/// with no lock: an encoder opening on one thread while another closed wrote through the freed
/// pointer (SIGSEGV in `svt_av1_enc_init_handle`), and a recording's encoder pool opens and
/// closes encoders on several threads. Encoding itself runs unlocked, in parallel; the lock
/// costs only the open and close of concurrent encoders, taken in turn.
static SVT_OPEN_CLOSE: Mutex<()> = Mutex::new(());

/// Encodes `frames` (each `height × width × 3` RGB bytes) into one AV1 stream, one
/// packet (temporal unit) per frame.
pub fn encode<'a>(frames: impl IntoIterator<Item = &'a [u8]>, width: usize, height: usize, opts: &Av1Options) -> Result<Encoded> {
    let mut options = Dictionary::new();
    options.set("crf", &opts.crf.to_string());
    let encoder = if width >= SVT_MIN && height >= SVT_MIN {
        options.set("preset", &opts.preset.to_string());
        options.set("svtav1-params", "lp=1");
        "libsvtav1"
    } else {
        options.set("cpu-used", "8");
        options.set("usage", "realtime");
        "libaom-av1"
    };
    let exclusive = (encoder == "libsvtav1").then_some(&SVT_OPEN_CLOSE);
    let setup = Setup { codec: Codec::Av1, encoder, options, fps: opts.fps, keyint: opts.keyint, exclusive };
    let _keep = KeepScheduling::now();
    video::encode(frames, width, height, setup)
}

/// Puts the calling thread back under the scheduling policy it had, when dropped.
///
/// Why: run as root, SVT-AV1 moves the thread that opens an encoder (and the threads it
/// starts) to real-time `SCHED_FIFO` at priority 99. Its own threads end with the encoder,
/// but the caller is one of our long-lived encoder-pool threads, or a user's Python thread:
/// left real-time, it and every thread it starts later outrank the rest of the machine (a
/// learner in the same process saw its dataset's commit thread starved for seconds,
/// issue 32). Costs two system calls per encoded episode.
struct KeepScheduling(Option<(libc::c_int, libc::sched_param)>);

impl KeepScheduling {
    fn now() -> KeepScheduling {
        let mut param = libc::sched_param { sched_priority: 0 };
        // SAFETY: pid 0 names the calling thread; `param` is a valid, writable sched_param.
        let policy = unsafe { libc::sched_getscheduler(0) };
        // SAFETY: as above.
        let ok = policy >= 0 && unsafe { libc::sched_getparam(0, &mut param) } == 0;
        KeepScheduling(ok.then_some((policy, param)))
    }
}

impl Drop for KeepScheduling {
    fn drop(&mut self) {
        let Some((policy, param)) = self.0 else { return };
        // SAFETY: pid 0 names the calling thread; `param` is a valid sched_param. Setting the
        // policy a thread already had needs no privilege; a failure changes nothing.
        unsafe {
            if libc::sched_getscheduler(0) != policy {
                libc::sched_setscheduler(0, policy, &param);
            }
        }
    }
}
