//! What both of an import's readers (`main_data.hdf5` in `import.rs`, arrow and
//! parquet episode folders in `arrow.rs`) do with a space's leaves: the source
//! trait they implement, Minari's image rule, and rows decoded into their place.

use rollway_core::{DType, EpisodeResult, LeafKind};

use crate::Result;

/// Minari's `is_image_space`: what it JPEG-encodes unless `jpeg_encoding` is false.
pub(super) fn is_image_leaf(l: &rollway_core::Leaf) -> bool {
    let LeafKind::Box { low, high } = &l.kind else { return false };
    l.dtype == DType::U8
        && matches!(l.shape.len(), 2 | 3)
        && l.shape[0] >= 32
        && l.shape[1] >= 32
        && low.iter().all(|&x| x == 0.0)
        && high.iter().all(|&x| x == 255.0)
}

/// Copies a leaf's rows (back to back) into their place in `out`'s rows of `rb` bytes.
pub(super) fn scatter_leaf(out: &mut [u8], rb: usize, leaf: &rollway_core::Leaf, bytes: &[u8]) {
    let lb = leaf.bytes();
    for (r, src) in bytes.chunks_exact(lb.max(1)).enumerate().take(out.len() / rb.max(1)) {
        out[r * rb + leaf.offset..r * rb + leaf.offset + lb].copy_from_slice(src);
    }
}

/// Decodes one JPEG a row (Minari's `jpeg_encoding`) into the first `rows` rows of an
/// image leaf, back to back; fewer images than rows is an error.
pub(super) fn jpeg_leaf_rows<'a>(
    blobs: impl IntoIterator<Item = &'a [u8]>,
    leaf: &rollway_core::Leaf,
    rows: usize,
) -> std::result::Result<Vec<u8>, String> {
    let (h, w, ch) = (leaf.shape[0], leaf.shape[1], leaf.shape.get(2).copied().unwrap_or(1));
    let lb = leaf.bytes();
    let mut out = vec![0u8; rows * lb];
    let mut n = 0;
    for (r, blob) in blobs.into_iter().take(rows).enumerate() {
        rollway_media::jpeg::decode(blob, w, h, ch, &mut out[r * lb..(r + 1) * lb]).map_err(|e| format!("row {r}: {e}"))?;
        n += 1;
    }
    if n < rows {
        return Err(format!("{n} rows, expected {rows}"));
    }
    Ok(out)
}

/// The first `rows` strings of a Text leaf as its rows of code points (a null as the
/// empty string); a string too long for the space is an error naming its row.
pub(super) fn text_rows(
    strings: impl IntoIterator<Item = Option<String>>,
    leaf: &rollway_core::Leaf,
    rows: usize,
) -> std::result::Result<Vec<u8>, String> {
    let max = leaf.len();
    let mut out = Vec::with_capacity(rows * leaf.bytes());
    let mut n = 0;
    for (r, s) in strings.into_iter().take(rows).enumerate() {
        let s = s.unwrap_or_default();
        let codes = rollway_core::text_codes(&s, max)
            .ok_or_else(|| format!("row {r}: {:?} has {} characters, the Text space at most {max}", s, s.chars().count()))?;
        out.extend(codes.iter().flat_map(|c| c.to_ne_bytes()));
        n += 1;
    }
    if n < rows {
        return Err(format!("{n} strings, expected {rows}"));
    }
    Ok(out)
}

/// Where an import's episodes come from: `main_data.hdf5`, or arrow/parquet episode folders.
pub(super) trait Source {
    /// Episodes present, when the metadata does not say how many.
    fn count_episodes(&self) -> Result<u64>;
    /// Whether episode `k` has per-step infos.
    fn has_infos(&self, k: u64) -> Result<bool>;
    /// Episode `k`, checked against the spaces.
    fn episode(&mut self, k: u64) -> Result<EpisodeResult>;
    /// Info keys not imported so far.
    fn skipped(&mut self) -> &mut Vec<String>;
}
