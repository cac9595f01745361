//! Image codecs for rollway's frame stores and exports: H.264 and AV1 in mp4 through
//! FFmpeg's libraries (libx264 and SVT-AV1 to encode, libavcodec and dav1d to decode
//! H.264, HEVC and AV1, libavformat for mp4) and JPEG through libjpeg-turbo. The store
//! decides where bytes go; this crate only turns frames into bytes and back.
//!
//! ```
//! use rollway_media::h264::{decode_range, encode, Decoder, H264Options};
//! // Eight 16×16 RGB frames, a gradient that moves.
//! let frames: Vec<Vec<u8>> = (0..8u8).map(|t| (0..16 * 16 * 3).map(|i| (i as u8).wrapping_add(t * 8)).collect()).collect();
//! let enc = encode(frames.iter().map(|f| f.as_slice()), 16, 16, &H264Options::default())?;
//! assert_eq!(enc.packets.len(), 8); // one packet per frame, none dropped
//! let mut dec = Decoder::new(enc.codec, &enc.extradata, 16, 16)?;
//! let mut got = Vec::new();
//! decode_range(&mut dec, &enc.packets, 3, 6, &mut |i, rgb| { got.push((i, rgb.len())); Ok(()) })?;
//! assert_eq!(got, vec![(3, 768), (4, 768), (5, 768)]);
//! # Ok::<(), rollway_media::Error>(())
//! ```

pub mod av1;
pub mod h264;
pub mod jpeg;
pub mod mp4;
pub mod pool;
pub mod video;

use std::path::PathBuf;
use std::sync::Once;

/// What can go wrong turning frames into bytes and back.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The codec library refused or failed.
    #[error("codec error: {0}")]
    Codec(String),
    /// The frames cannot be stored this way (odd size, channel count…).
    #[error("unsupported: {0}")]
    Unsupported(String),
    /// A media file could not be written or read.
    #[error("{}: {message}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// What went wrong.
        message: String,
    },
}

/// Result with this crate's error.
pub type Result<T> = std::result::Result<T, Error>;

/// PSNR in dB between two equally long byte images (∞ when equal).
pub fn psnr(a: &[u8], b: &[u8]) -> f64 {
    assert_eq!(a.len(), b.len(), "psnr of differently sized images");
    let se: f64 = a.iter().zip(b).map(|(&x, &y)| (x as f64 - y as f64).powi(2)).sum();
    if se == 0.0 {
        return f64::INFINITY;
    }
    10.0 * (255.0f64 * 255.0 / (se / a.len() as f64)).log10()
}

/// `bytes` copied into FFmpeg's allocator with the zero padding libavcodec may read
/// past the end: what a codec context or stream parameters own as `extradata`.
#[allow(unsafe_code)] // FFmpeg's allocator: no safe wrapper
pub(crate) fn av_extradata(bytes: &[u8]) -> Result<(*mut u8, i32)> {
    let pad = ffmpeg_next::ffi::AV_INPUT_BUFFER_PADDING_SIZE as usize;
    // SAFETY: a fresh zeroed allocation of len + pad bytes, filled with len bytes.
    unsafe {
        let buf = ffmpeg_next::ffi::av_mallocz(bytes.len() + pad) as *mut u8;
        if buf.is_null() {
            return Err(Error::Codec("out of memory for extradata".into()));
        }
        std::ptr::copy_nonoverlapping(bytes.as_ptr(), buf, bytes.len());
        Ok((buf, bytes.len() as i32))
    }
}

/// A copy of FFmpeg-owned `extradata` (empty when there is none).
///
/// # Safety
/// `p` is null or points at `size` readable bytes.
#[allow(unsafe_code)] // reading what FFmpeg owns
pub(crate) unsafe fn copy_extradata(p: *const u8, size: i32) -> Vec<u8> {
    if p.is_null() {
        Vec::new()
    } else {
        std::slice::from_raw_parts(p, size as usize).to_vec()
    }
}

pub(crate) fn init() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let _ = ffmpeg_next::init();
        // libx264, the demuxer and the decoder talk on stderr; every failure reaches the
        // caller as an error value with its path, so their chatter is noise.
        ffmpeg_next::util::log::set_level(ffmpeg_next::util::log::Level::Fatal);
    });
}
