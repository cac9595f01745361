//! Video codecs through FFmpeg's libavcodec, whatever the codec: RGB frames in,
//! packets out, and back. The encoders of each codec (`h264`, `av1`) only choose
//! their library and its settings; the frame loop, the packet bookkeeping and
//! frame-accurate decoding are the same for all of them and live here.
//!
//! Every episode is encoded by its own encoder so episodes encode in parallel; the
//! packets of many episodes can later share one mp4 because every encoder runs with
//! the same settings and so emits the same parameter sets (checked when muxing).
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::collections::VecDeque;
use std::mem::ManuallyDrop;
use std::ops::{Deref, DerefMut};
use std::sync::{Mutex, MutexGuard, PoisonError};

use ff::codec::{self, Id};
use ff::format::Pixel;
use ff::software::scaling;
use ff::util::frame::Video as VFrame;
use ff::{Dictionary, Rational};
use ffmpeg_next as ff;

use crate::{av_extradata, copy_extradata, init, Error, Result};

/// A video codec rollway can decode (and, for H.264 and AV1, encode).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Codec {
    /// H.264 / AVC: libx264 to encode, FFmpeg's own decoder.
    #[default]
    H264,
    /// H.265 / HEVC: decode only, with FFmpeg's own decoder.
    Hevc,
    /// AV1: SVT-AV1 to encode (LeRobot's default codec), dav1d to decode.
    Av1,
}

impl Codec {
    /// Every codec, in the order error messages list them.
    pub const ALL: [Codec; 3] = [Codec::H264, Codec::Hevc, Codec::Av1];

    /// The name users write (`--video-codec`) and messages print.
    pub fn name(self) -> &'static str {
        match self {
            Codec::H264 => "h264",
            Codec::Hevc => "hevc",
            Codec::Av1 => "av1",
        }
    }

    /// The codec of this name (as [`Codec::name`] spells it).
    pub fn parse(name: &str) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.name() == name)
    }

    pub(crate) fn id(self) -> Id {
        match self {
            Codec::H264 => Id::H264,
            Codec::Hevc => Id::HEVC,
            Codec::Av1 => Id::AV1,
        }
    }

    pub(crate) fn from_id(id: Id) -> Option<Codec> {
        Codec::ALL.into_iter().find(|c| c.id() == id)
    }

    /// The names of every codec, for messages: `h264, hevc, av1`.
    pub fn names() -> String {
        Codec::ALL.map(Codec::name).join(", ")
    }

    fn decoder(self) -> Option<ff::Codec> {
        // FFmpeg's native AV1 decoder needs a hardware accelerator; the software
        // decoders are libraries of their own, dav1d first (the fastest).
        let by_name = match self {
            Codec::Av1 => ["libdav1d", "libaom-av1"].iter().find_map(|n| ff::decoder::find_by_name(n)),
            _ => None,
        };
        by_name.or_else(|| ff::decoder::find(self.id()))
    }
}

/// One compressed packet, timestamps in frames (time base `1/fps`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// The bytes as the encoder produced them.
    pub data: Vec<u8>,
    /// Presentation index of the frame it carries.
    pub pts: i64,
    /// Decode timestamp.
    pub dts: i64,
    /// A keyframe: decoding can start here.
    pub key: bool,
}

/// One episode's frames, compressed.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoded {
    /// The codec of the packets.
    pub codec: Codec,
    /// Codec extradata (H.264's SPS/PPS, AV1's sequence header), the same for every
    /// episode encoded with the same options.
    pub extradata: Vec<u8>,
    /// Packets in decode order.
    pub packets: Vec<Packet>,
}

pub(crate) fn ff_err(what: &str) -> impl Fn(ff::Error) -> Error + '_ {
    move |e| Error::Codec(format!("{what}: {e}"))
}

pub(crate) fn check_dims(width: usize, height: usize) -> Result<()> {
    if width == 0 || height == 0 || !width.is_multiple_of(2) || !height.is_multiple_of(2) {
        return Err(Error::Unsupported(format!("yuv420p video needs even, non-zero frame sizes; got {width}×{height}")));
    }
    Ok(())
}

/// How a codec's encoder is opened: the library, its private options, the GOP.
pub(crate) struct Setup<'a> {
    pub codec: Codec,
    /// The FFmpeg encoder's name (`libx264`, `libsvtav1`).
    pub encoder: &'a str,
    pub options: Dictionary<'a>,
    pub fps: u32,
    pub keyint: u32,
    /// Held while the encoder opens and while it closes, for a library whose open and close
    /// share process-wide state without a lock of their own (SVT-AV1: see `av1.rs`).
    pub exclusive: Option<&'static Mutex<()>>,
}

fn hold(lock: Option<&'static Mutex<()>>) -> Option<MutexGuard<'static, ()>> {
    // A panic elsewhere while it was held leaves no state of ours half-made: the lock only
    // orders the library's calls.
    lock.map(|m| m.lock().unwrap_or_else(PoisonError::into_inner))
}

/// An open encoder that closes under [`Setup::exclusive`]'s lock, however `encode` leaves
/// (finished, an error, a panic).
struct Opened {
    enc: ManuallyDrop<ff::encoder::Video>,
    exclusive: Option<&'static Mutex<()>>,
}

impl Deref for Opened {
    type Target = ff::encoder::Video;
    fn deref(&self) -> &Self::Target {
        &self.enc
    }
}

impl DerefMut for Opened {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.enc
    }
}

impl Drop for Opened {
    fn drop(&mut self) {
        let _held = hold(self.exclusive);
        // SAFETY: `enc` is dropped here once, and nothing reads it after: `self` is going away.
        unsafe { ManuallyDrop::drop(&mut self.enc) }
    }
}

/// Encodes `frames` (each `height × width × 3` RGB bytes) with `setup`. Every
/// frame comes back as exactly one packet (none dropped in constant-quality mode),
/// which is checked.
pub(crate) fn encode<'a>(frames: impl IntoIterator<Item = &'a [u8]>, width: usize, height: usize, setup: Setup) -> Result<Encoded> {
    init();
    check_dims(width, height)?;
    let name = setup.encoder;
    let codec = ff::encoder::find_by_name(name).ok_or_else(|| Error::Unsupported(format!("this FFmpeg has no {name} encoder")))?;
    let mut ctx = codec::context::Context::new_with_codec(codec).encoder().video().map_err(ff_err("creating the encoder"))?;
    ctx.set_width(width as u32);
    ctx.set_height(height as u32);
    ctx.set_format(Pixel::YUV420P);
    ctx.set_time_base(Rational::new(1, setup.fps as i32));
    ctx.set_frame_rate(Some(Rational::new(setup.fps as i32, 1)));
    ctx.set_gop(setup.keyint);
    // One thread per encoder: episodes run in parallel instead, which scales on small
    // frames where an encoder's own threads mostly wait on each other.
    ctx.set_threading(codec::threading::Config { kind: codec::threading::Type::None, count: 1, ..Default::default() });
    // Parameter sets in extradata (mp4's avcC/av1C) rather than repeated in the stream.
    ctx.set_flags(codec::Flags::GLOBAL_HEADER);
    // A failed open frees the context inside `open_with`, under the lock too.
    let opened = {
        let _held = hold(setup.exclusive);
        ctx.open_with(setup.options)
    };
    let enc = opened.map_err(|e| Error::Codec(format!("opening {name}: {e}")))?;
    let mut enc = Opened { enc: ManuallyDrop::new(enc), exclusive: setup.exclusive };
    let extradata = unsafe {
        // SAFETY: the opened context owns `extradata_size` bytes at `extradata` (or null).
        let p = enc.as_ptr();
        copy_extradata((*p).extradata, (*p).extradata_size)
    };
    let mut scaler = scaling::Context::get(
        Pixel::RGB24,
        width as u32,
        height as u32,
        Pixel::YUV420P,
        width as u32,
        height as u32,
        scaling::Flags::BILINEAR,
    )
    .map_err(ff_err("creating the RGB→YUV converter"))?;
    let mut rgb = VFrame::new(Pixel::RGB24, width as u32, height as u32);
    let mut yuv = VFrame::new(Pixel::YUV420P, width as u32, height as u32);
    let mut out = Encoded { codec: setup.codec, extradata, packets: Vec::new() };
    let mut pkt = ff::Packet::empty();
    let mut drain = |enc: &mut ff::encoder::Video, out: &mut Encoded| {
        while enc.receive_packet(&mut pkt).is_ok() {
            out.packets.push(Packet {
                data: pkt.data().unwrap_or_default().to_vec(),
                pts: pkt.pts().unwrap_or(0),
                dts: pkt.dts().unwrap_or(0),
                key: pkt.is_key(),
            });
        }
    };
    let row = width * 3;
    let mut n = 0i64;
    for f in frames {
        if f.len() != row * height {
            return Err(Error::Unsupported(format!("frame {n} has {} bytes, expected {}", f.len(), row * height)));
        }
        let stride = rgb.stride(0);
        let dst = rgb.data_mut(0);
        for (y, src) in f.chunks_exact(row).enumerate() {
            dst[y * stride..y * stride + row].copy_from_slice(src);
        }
        scaler.run(&rgb, &mut yuv).map_err(ff_err("converting RGB to YUV"))?;
        yuv.set_pts(Some(n));
        enc.send_frame(&yuv).map_err(ff_err("encoding"))?;
        drain(&mut enc, &mut out);
        n += 1;
    }
    enc.send_eof().map_err(ff_err("flushing the encoder"))?;
    drain(&mut enc, &mut out);
    if out.packets.len() as i64 != n {
        return Err(Error::Codec(format!("{name} returned {} packets for {n} frames", out.packets.len())));
    }
    Ok(out)
}

/// Decodes packets back to RGB, frame-accurately from any keyframe.
pub struct Decoder {
    dec: ff::decoder::Video,
    /// The converter to RGB for the decoded pixel format (yuv420p nearly always;
    /// a stream in another format gets its own, made when first seen).
    scaler: Option<(Pixel, scaling::Context)>,
    yuv: VFrame,
    rgb: VFrame,
    width: usize,
    height: usize,
    /// Where [`decode_range`] left off, so a later range can continue instead of
    /// seeking back to a keyframe.
    cursor: Option<Cursor>,
}

/// A decoder's position in a packet list: packets `..next` were fed since keyframe
/// `key`, frames before `done` were handed out or skipped, `held` were decoded but
/// not wanted yet.
struct Cursor {
    key: usize,
    next: usize,
    done: i64,
    held: VecDeque<(i64, Vec<u8>)>,
}

impl Decoder {
    /// A decoder for `codec` streams with this `extradata` and frame size.
    pub fn new(codec: Codec, extradata: &[u8], width: usize, height: usize) -> Result<Decoder> {
        init();
        check_dims(width, height)?;
        let found = codec.decoder().ok_or_else(|| Error::Unsupported(format!("this FFmpeg has no {} decoder", codec.name())))?;
        let mut ctx = codec::context::Context::new_with_codec(found);
        let (buf, size) = av_extradata(extradata)?;
        unsafe {
            // SAFETY: libavcodec takes ownership of an av_malloc'd, padded extradata buffer.
            let p = ctx.as_mut_ptr();
            (*p).extradata = buf;
            (*p).extradata_size = size;
        }
        // Decoding runs on the loader's threads; one thread each keeps latency low.
        ctx.set_threading(codec::threading::Config { kind: codec::threading::Type::None, count: 1, ..Default::default() });
        let dec = ctx.decoder().video().map_err(|e| Error::Codec(format!("opening the {} decoder: {e}", codec.name())))?;
        Ok(Decoder {
            dec,
            scaler: None,
            yuv: VFrame::empty(),
            rgb: VFrame::new(Pixel::RGB24, width as u32, height as u32),
            width,
            height,
            cursor: None,
        })
    }

    /// Starts over (before feeding packets from a keyframe).
    pub fn reset(&mut self) {
        self.dec.flush();
        self.cursor = None;
    }

    /// The first frame a continued [`decode_range`] could still deliver (`None`
    /// when it would start from a keyframe): lets a pool pick the decoder that is
    /// already closest before a wanted range.
    pub fn position(&self) -> Option<i64> {
        self.cursor.as_ref().map(|c| c.done)
    }

    /// Feeds one packet; calls `sink(pts, rgb)` for every frame that comes out.
    pub fn feed(&mut self, p: &Packet, sink: &mut dyn FnMut(i64, &[u8]) -> Result<()>) -> Result<()> {
        let mut pkt = ff::Packet::copy(&p.data);
        pkt.set_pts(Some(p.pts));
        pkt.set_dts(Some(p.dts));
        self.dec.send_packet(&pkt).map_err(ff_err("decoding"))?;
        self.drain(sink)
    }

    /// Signals the end of the packets and returns the frames still buffered.
    pub fn finish(&mut self, sink: &mut dyn FnMut(i64, &[u8]) -> Result<()>) -> Result<()> {
        self.dec.send_eof().map_err(ff_err("flushing the decoder"))?;
        self.drain(sink)?;
        self.dec.flush();
        Ok(())
    }

    fn drain(&mut self, sink: &mut dyn FnMut(i64, &[u8]) -> Result<()>) -> Result<()> {
        while self.dec.receive_frame(&mut self.yuv).is_ok() {
            let format = self.yuv.format();
            if self.yuv.width() as usize != self.width || self.yuv.height() as usize != self.height {
                return Err(Error::Codec(format!(
                    "decoded a {}×{} frame, expected {}×{}",
                    self.yuv.width(),
                    self.yuv.height(),
                    self.width,
                    self.height
                )));
            }
            if self.scaler.as_ref().is_none_or(|(f, _)| *f != format) {
                let (w, h) = (self.width as u32, self.height as u32);
                let s = scaling::Context::get(format, w, h, Pixel::RGB24, w, h, scaling::Flags::BILINEAR)
                    .map_err(|e| Error::Codec(format!("converting {format:?} frames to RGB: {e}")))?;
                self.scaler = Some((format, s));
            }
            let (_, scaler) = self.scaler.as_mut().expect("made above");
            scaler.run(&self.yuv, &mut self.rgb).map_err(ff_err("converting to RGB"))?;
            let (stride, row) = (self.rgb.stride(0), self.width * 3);
            let data = self.rgb.data(0);
            let pts = self.yuv.pts().unwrap_or(-1);
            if stride == row {
                sink(pts, &data[..row * self.height])?;
            } else {
                let packed: Vec<u8> = (0..self.height).flat_map(|y| data[y * stride..y * stride + row].iter().copied()).collect();
                sink(pts, &packed)?;
            }
        }
        Ok(())
    }
}

/// Decodes frames `from..to` (presentation indices) of a stream whose packets are
/// `packets` (decode order), and hands each to `sink(i, rgb)` in order. It continues
/// from where the previous call on this decoder stopped when that is on the way
/// (same packets, later frames, same GOP run); otherwise it starts at the last
/// keyframe at or before `from`. Frames decoded past `to` are kept for the next call.
pub fn decode_range(
    dec: &mut Decoder,
    packets: &[Packet],
    from: i64,
    to: i64,
    sink: &mut dyn FnMut(i64, &[u8]) -> Result<()>,
) -> Result<()> {
    let key = packets
        .iter()
        .rposition(|p| p.key && p.pts <= from)
        .ok_or_else(|| Error::Codec(format!("no keyframe at or before frame {from}")))?;
    let resume =
        dec.cursor.as_ref().is_some_and(|c| c.done <= from && c.key <= key && c.next <= packets.len() && (c.next > key || c.key == key));
    if !resume {
        dec.dec.flush();
        dec.cursor = Some(Cursor { key, next: key, done: 0, held: Default::default() });
    }
    let mut cur = dec.cursor.take().expect("set above");
    let next = std::cell::Cell::new(from);
    let mut take = |pts: i64, rgb: &[u8], held: &mut VecDeque<(i64, Vec<u8>)>| -> Result<()> {
        if pts >= to {
            held.push_back((pts, rgb.to_vec()));
        } else if pts >= from {
            if pts != next.get() {
                return Err(Error::Codec(format!("decoded frame {pts} where frame {} was due", next.get())));
            }
            next.set(pts + 1);
            sink(pts, rgb)?;
        }
        Ok(())
    };
    let result = (|| -> Result<()> {
        let mut held = std::mem::take(&mut cur.held);
        while let Some((pts, rgb)) = held.pop_front() {
            take(pts, &rgb, &mut cur.held)?;
        }
        while next.get() < to && cur.next < packets.len() {
            let packet = &packets[cur.next];
            dec.feed(packet, &mut |pts, rgb| take(pts, rgb, &mut cur.held))?;
            cur.next += 1;
        }
        if next.get() < to {
            // The end of the stream: the decoder gives up the frames it still holds.
            dec.finish(&mut |pts, rgb| take(pts, rgb, &mut cur.held))?;
            cur.next = usize::MAX; // drained: only a restart can go on
        }
        if next.get() != to {
            return Err(Error::Codec(format!("frames {}..{to} are missing from the stream", next.get())));
        }
        Ok(())
    })();
    match result {
        Ok(()) if cur.next != usize::MAX => {
            cur.done = to;
            dec.cursor = Some(cur);
        }
        _ => dec.reset(),
    }
    result
}
