//! H.264 through FFmpeg's libavcodec + libx264: RGB frames in, packets out, and back.
//!
//! Every episode is encoded by its own encoder so episodes encode in parallel; the
//! packets of many episodes can later share one mp4 because every encoder runs with
//! the same settings and so emits the same parameter sets (checked when muxing).

use ff::codec::{self, Id};
use ff::format::Pixel;
use ff::software::scaling;
use ff::util::frame::Video as VFrame;
use ff::{Dictionary, Rational};
use ffmpeg_next as ff;

use crate::{av_extradata, copy_extradata, init, Error, Result};

/// Encoder settings. The defaults aim at PyAV's default libx264 output (preset medium,
/// CRF 23, keyframes every 250) in bytes per frame and PSNR at a fraction of the time
/// (bench/RESULTS.md). `keyint` trades size for random access: keyframes cost most of
/// the bytes of rendered frames, and a loader decodes up to `keyint` frames to reach one.
#[derive(Clone, Debug, PartialEq)]
pub struct H264Options {
    /// Constant rate factor (0–51, lower = better quality). x264's default is 23.
    pub crf: f32,
    /// x264 preset (`ultrafast` … `placebo`).
    pub preset: String,
    /// Maximum frames between keyframes; random access decodes at most this many.
    pub keyint: u32,
    /// Frames per second written in the container (timestamps are `frame / fps`).
    pub fps: u32,
    /// Extra `x264-params` (`key=value:key=value`), empty for none.
    pub x264_params: String,
}

impl Default for H264Options {
    fn default() -> Self {
        H264Options { crf: 23.0, preset: "fast".into(), keyint: 128, fps: 30, x264_params: String::new() }
    }
}

/// One compressed packet, timestamps in frames (time base `1/fps`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Packet {
    /// Annex-B bytes as the encoder produced them.
    pub data: Vec<u8>,
    /// Presentation index of the frame it carries.
    pub pts: i64,
    /// Decode timestamp.
    pub dts: i64,
    /// A keyframe (IDR): decoding can start here.
    pub key: bool,
}

/// One episode's frames as H.264.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Encoded {
    /// Codec extradata (SPS/PPS), the same for every episode encoded with the same options.
    pub extradata: Vec<u8>,
    /// Packets in decode order.
    pub packets: Vec<Packet>,
}

fn ff_err(what: &str) -> impl Fn(ff::Error) -> Error + '_ {
    move |e| Error::Codec(format!("{what}: {e}"))
}

fn check_dims(width: usize, height: usize) -> Result<()> {
    if width == 0 || height == 0 || !width.is_multiple_of(2) || !height.is_multiple_of(2) {
        return Err(Error::Unsupported(format!("H.264 (yuv420p) needs even, non-zero frame sizes; got {width}×{height}")));
    }
    Ok(())
}

/// Encodes `frames` (each `height × width × 3` RGB bytes) into one closed-GOP H.264 stream.
/// Every frame comes back as exactly one packet: x264 in CRF mode never drops frames,
/// and the count is checked anyway.
pub fn encode<'a>(frames: impl IntoIterator<Item = &'a [u8]>, width: usize, height: usize, opts: &H264Options) -> Result<Encoded> {
    init();
    check_dims(width, height)?;
    let codec = ff::encoder::find_by_name("libx264").ok_or_else(|| Error::Unsupported("this FFmpeg has no libx264 encoder".into()))?;
    let mut ctx = codec::context::Context::new_with_codec(codec).encoder().video().map_err(ff_err("creating the encoder"))?;
    ctx.set_width(width as u32);
    ctx.set_height(height as u32);
    ctx.set_format(Pixel::YUV420P);
    ctx.set_time_base(Rational::new(1, opts.fps as i32));
    ctx.set_frame_rate(Some(Rational::new(opts.fps as i32, 1)));
    ctx.set_gop(opts.keyint);
    // One thread per encoder: episodes run in parallel instead, which scales on small
    // frames where x264's own frame threads mostly wait on each other.
    ctx.set_threading(codec::threading::Config { kind: codec::threading::Type::None, count: 1, ..Default::default() });
    // SPS/PPS in extradata (mp4's avcC) rather than repeated in the stream.
    ctx.set_flags(codec::Flags::GLOBAL_HEADER);
    let mut dict = Dictionary::new();
    dict.set("preset", &opts.preset);
    dict.set("crf", &format!("{}", opts.crf));
    // Keyframes only on the interval, never on scene cuts, so random access cost is bounded
    // and predictable; closed GOPs so decoding can start at any keyframe.
    let mut params = "scenecut=0:open-gop=0".to_string();
    if !opts.x264_params.is_empty() {
        params.push(':');
        params.push_str(&opts.x264_params);
    }
    dict.set("x264-params", &params);
    let mut enc = ctx.open_with(dict).map_err(ff_err("opening libx264"))?;
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
    let mut out = Encoded { extradata, packets: Vec::new() };
    let mut pkt = ff::Packet::empty();
    let mut drain = |enc: &mut ff::encoder::Video, out: &mut Encoded| -> Result<()> {
        while enc.receive_packet(&mut pkt).is_ok() {
            out.packets.push(Packet {
                data: pkt.data().unwrap_or_default().to_vec(),
                pts: pkt.pts().unwrap_or(0),
                dts: pkt.dts().unwrap_or(0),
                key: pkt.is_key(),
            });
        }
        Ok(())
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
        drain(&mut enc, &mut out)?;
        n += 1;
    }
    enc.send_eof().map_err(ff_err("flushing the encoder"))?;
    drain(&mut enc, &mut out)?;
    if out.packets.len() as i64 != n {
        return Err(Error::Codec(format!("the encoder returned {} packets for {n} frames", out.packets.len())));
    }
    Ok(out)
}

/// Decodes H.264 packets back to RGB, frame-accurately from any keyframe.
pub struct Decoder {
    dec: ff::decoder::Video,
    scaler: scaling::Context,
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
    held: std::collections::VecDeque<(i64, Vec<u8>)>,
}

impl Decoder {
    /// A decoder for streams with this `extradata` and frame size.
    pub fn new(extradata: &[u8], width: usize, height: usize) -> Result<Decoder> {
        init();
        check_dims(width, height)?;
        let codec = ff::decoder::find(Id::H264).ok_or_else(|| Error::Unsupported("this FFmpeg has no H.264 decoder".into()))?;
        let mut ctx = codec::context::Context::new_with_codec(codec);
        let (buf, size) = av_extradata(extradata)?;
        unsafe {
            // SAFETY: libavcodec takes ownership of an av_malloc'd, padded extradata buffer.
            let p = ctx.as_mut_ptr();
            (*p).extradata = buf;
            (*p).extradata_size = size;
        }
        // Decoding runs on the loader's threads; one thread each keeps latency low.
        ctx.set_threading(codec::threading::Config { kind: codec::threading::Type::None, count: 1, ..Default::default() });
        let dec = ctx.decoder().video().map_err(ff_err("opening the H.264 decoder"))?;
        let scaler = scaling::Context::get(
            Pixel::YUV420P,
            width as u32,
            height as u32,
            Pixel::RGB24,
            width as u32,
            height as u32,
            scaling::Flags::BILINEAR,
        )
        .map_err(ff_err("creating the YUV→RGB converter"))?;
        Ok(Decoder {
            dec,
            scaler,
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
            if self.yuv.width() as usize != self.width || self.yuv.height() as usize != self.height || self.yuv.format() != Pixel::YUV420P {
                return Err(Error::Codec(format!(
                    "decoded a {}×{} {:?} frame, expected {}×{} yuv420p",
                    self.yuv.width(),
                    self.yuv.height(),
                    self.yuv.format(),
                    self.width,
                    self.height
                )));
            }
            self.scaler.run(&self.yuv, &mut self.rgb).map_err(ff_err("converting YUV to RGB"))?;
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
    let mut take = |pts: i64, rgb: &[u8], held: &mut std::collections::VecDeque<(i64, Vec<u8>)>| -> Result<()> {
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
