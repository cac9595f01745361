//! mp4 files of H.264 or AV1 packets, through FFmpeg's libavformat: what PyAV, LeRobot
//! and MineStudio read (reading takes HEVC too). Packets of many episodes go into one file back to back; their
//! timestamps are shifted so frame `i` of the file is shown at `i / fps` seconds.
#![allow(unsafe_code)] // measured to matter here; every block says why it is sound (SAFETY)

use std::path::Path;

use ff::codec::{self, Id};
use ff::media::Type;
use ff::Rational;
use ffmpeg_next as ff;

use crate::video::{Codec, Encoded, Packet};
use crate::{av_extradata, copy_extradata, init, Error, Result};

/// A demuxed mp4 video stream.
#[derive(Clone, Debug, Default)]
pub struct Video {
    /// The codec of the packets.
    pub codec: Codec,
    /// Frame width.
    pub width: usize,
    /// Frame height.
    pub height: usize,
    /// Frames per second (timestamps are in frames).
    pub fps: u32,
    /// Codec extradata (SPS/PPS, AV1's sequence header).
    pub extradata: Vec<u8>,
    /// Packets in decode order, timestamps in frames from the start of the file.
    pub packets: Vec<Packet>,
}

impl Video {
    /// Number of frames.
    pub fn frames(&self) -> usize {
        self.packets.len()
    }
}

fn io<'a>(path: &'a Path, what: &'static str) -> impl Fn(ff::Error) -> Error + 'a {
    move |e| Error::File { path: path.to_path_buf(), message: format!("{what}: {e}") }
}

/// Writes `episodes` (each encoded on its own, same options) into one mp4 at `path`,
/// in order; returns the number of frames. Every packet gets a one-frame duration so
/// that the last frame is not dropped by players that trust durations.
pub fn write(path: &Path, width: usize, height: usize, fps: u32, episodes: &[&Encoded]) -> Result<u64> {
    init();
    let extradata = episodes.first().map(|e| e.extradata.clone()).unwrap_or_default();
    let codec = episodes.first().map(|e| e.codec).unwrap_or_default();
    if let Some(bad) = episodes.iter().position(|e| e.extradata != extradata || e.codec != codec) {
        return Err(Error::Codec(format!(
            "episode {bad} was encoded with different settings (parameter sets differ); cannot share one mp4"
        )));
    }
    let mut out = ff::format::output_as(path, "mp4").map_err(io(path, "creating mp4"))?;
    let tb = Rational::new(1, fps as i32);
    {
        let mut st = out.add_stream(ff::encoder::find(codec.id())).map_err(io(path, "adding the video stream"))?;
        st.set_time_base(tb);
        st.set_avg_frame_rate(Rational::new(fps as i32, 1));
        st.set_rate(Rational::new(fps as i32, 1));
        let (buf, size) = av_extradata(&extradata)?;
        unsafe {
            // SAFETY: a fresh stream's codecpar is ours to fill; extradata must be av_malloc'd and padded.
            let par = (*st.as_mut_ptr()).codecpar;
            (*par).codec_type = ff::ffi::AVMediaType::AVMEDIA_TYPE_VIDEO;
            (*par).codec_id = codec.id().into();
            (*par).width = width as i32;
            (*par).height = height as i32;
            (*par).format = ff::ffi::AVPixelFormat::AV_PIX_FMT_YUV420P as i32;
            (*par).extradata = buf;
            (*par).extradata_size = size;
        }
    }
    out.write_header().map_err(io(path, "writing the mp4 header"))?;
    let stream_tb = out.stream(0).map(|s| s.time_base()).unwrap_or(tb);
    // Decode timestamps are renumbered as one counter over the file, starting at the
    // largest B-frame delay any episode has (short episodes have none): they stay
    // strictly increasing across episode joins and never pass a presentation time.
    let delay = episodes.iter().filter_map(|e| e.packets.first()).map(|p| -p.dts.min(0)).max().unwrap_or(0);
    let mut dts = -delay;
    let mut offset = 0i64;
    for e in episodes {
        for p in &e.packets {
            let mut pkt = ff::Packet::copy(&p.data);
            pkt.set_stream(0);
            pkt.set_pts(Some(p.pts + offset));
            pkt.set_dts(Some(dts));
            dts += 1;
            pkt.set_duration(1);
            if p.key {
                pkt.set_flags(codec::packet::Flags::KEY);
            }
            pkt.rescale_ts(tb, stream_tb);
            pkt.write(&mut out).map_err(io(path, "writing a packet"))?;
        }
        offset += e.packets.len() as i64;
    }
    out.write_trailer().map_err(io(path, "finishing the mp4"))?;
    Ok(offset as u64)
}

/// Reads every packet of the first video stream of an mp4 (or any container FFmpeg reads).
pub fn read(path: &Path) -> Result<Video> {
    init();
    let mut input = ff::format::input(path).map_err(io(path, "opening"))?;
    let st =
        input.streams().best(Type::Video).ok_or_else(|| Error::File { path: path.to_path_buf(), message: "no video stream".into() })?;
    let (index, tb) = (st.index(), st.time_base());
    let rate = st.avg_frame_rate();
    let fps = if rate.denominator() > 0 && rate.numerator() > 0 {
        (rate.numerator() as f64 / rate.denominator() as f64).round() as u32
    } else {
        30
    };
    let par = st.parameters();
    let (width, height, extradata, codec_id) = unsafe {
        // SAFETY: codecpar of an open input stream; extradata has extradata_size bytes.
        let p = par.as_ptr();
        let ex = copy_extradata((*p).extradata, (*p).extradata_size);
        ((*p).width as usize, (*p).height as usize, ex, (*p).codec_id)
    };
    let codec = Codec::from_id(codec_id.into()).ok_or_else(|| Error::File {
        path: path.to_path_buf(),
        message: format!("video codec is {:?}; rollway decodes {}", Id::from(codec_id), Codec::names()),
    })?;
    let ftb = Rational::new(1, fps as i32);
    let mut packets = Vec::new();
    for (s, mut pkt) in input.packets() {
        if s.index() != index {
            continue;
        }
        pkt.rescale_ts(tb, ftb);
        packets.push(Packet {
            data: pkt.data().unwrap_or_default().to_vec(),
            pts: pkt.pts().unwrap_or(0),
            dts: pkt.dts().unwrap_or(0),
            key: pkt.is_key(),
        });
    }
    // The muxer may shift decode timestamps (B-frame delay); presentation indices start at 0.
    if let Some(min) = packets.iter().map(|p| p.pts).min() {
        for p in &mut packets {
            p.pts -= min;
            p.dts -= min;
        }
    }
    Ok(Video { codec, width, height, fps, extradata, packets })
}
