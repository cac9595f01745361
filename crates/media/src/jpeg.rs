//! JPEG through libjpeg-turbo (the library Pillow and PyAV's image paths use).

use turbojpeg::{Compressor, Decompressor, Image, PixelFormat, Subsamp};

use crate::{Error, Result};

fn format(channels: usize) -> Result<PixelFormat> {
    match channels {
        3 => Ok(PixelFormat::RGB),
        1 => Ok(PixelFormat::GRAY),
        4 => Ok(PixelFormat::RGBA),
        c => Err(Error::Unsupported(format!("JPEG frames need 1, 3 or 4 channels, not {c}"))),
    }
}

/// A reusable JPEG encoder (one per thread: libjpeg-turbo handles are not shared).
pub struct Encoder {
    c: Compressor,
}

impl Encoder {
    /// An encoder at `quality` (1–100; Pillow's default is 75) with 4:2:0 chroma, as Pillow does.
    pub fn new(quality: u8, channels: usize) -> Result<Encoder> {
        let mut c = Compressor::new().map_err(|e| Error::Codec(format!("libjpeg-turbo: {e}")))?;
        c.set_quality(quality.clamp(1, 100) as i32);
        c.set_subsamp(if channels == 1 { Subsamp::Gray } else { Subsamp::Sub2x2 });
        Ok(Encoder { c })
    }

    /// Encodes one `height × width × channels` frame.
    pub fn encode(&mut self, frame: &[u8], width: usize, height: usize, channels: usize) -> Result<Vec<u8>> {
        if frame.len() != width * height * channels {
            return Err(Error::Unsupported(format!("frame has {} bytes, expected {width}×{height}×{channels}", frame.len())));
        }
        let img = Image { pixels: frame, width, pitch: width * channels, height, format: format(channels)? };
        self.c.compress_to_vec(img).map_err(|e| Error::Codec(format!("JPEG encode: {e}")))
    }
}

/// Decodes one JPEG into `out` (`height × width × channels` bytes), checking its size.
pub fn decode(jpeg: &[u8], width: usize, height: usize, channels: usize, out: &mut [u8]) -> Result<()> {
    thread_local! {
        // One handle per thread: creating one costs about as much as decoding a small frame.
        static DECOMPRESSOR: std::cell::RefCell<Option<Decompressor>> = const { std::cell::RefCell::new(None) };
    }
    DECOMPRESSOR.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            *slot = Some(Decompressor::new().map_err(|e| Error::Codec(format!("libjpeg-turbo: {e}")))?);
        }
        decode_with(slot.as_mut().expect("just set"), jpeg, width, height, channels, out)
    })
}

fn decode_with(d: &mut Decompressor, jpeg: &[u8], width: usize, height: usize, channels: usize, out: &mut [u8]) -> Result<()> {
    let h = d.read_header(jpeg).map_err(|e| Error::Codec(format!("JPEG header: {e}")))?;
    if h.width != width || h.height != height {
        return Err(Error::Codec(format!("JPEG is {}×{}, expected {width}×{height}", h.width, h.height)));
    }
    if out.len() != width * height * channels {
        return Err(Error::Unsupported(format!("output has {} bytes, expected {width}×{height}×{channels}", out.len())));
    }
    let img = Image { pixels: out, width, pitch: width * channels, height, format: format(channels)? };
    d.decompress(jpeg, img).map_err(|e| Error::Codec(format!("JPEG decode: {e}")))
}
