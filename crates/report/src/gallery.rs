//! The frames section: for a few episodes, labelled and not, a strip of
//! thumbnails over the episode and a playable clip.

use rollway_core::Status;
use rollway_store::{Dataset, IndexEntry};

use crate::error::Result;
use crate::html::{note, t};
use crate::media::{self, ReportMedia};

/// Episodes per group (labelled, unlabelled) shown as thumbnail strips, and as clips.
const STRIPS: usize = 3;
const CLIPS: usize = 2;
/// Frame keys shown (a dataset with many cameras shows its first two).
const KEYS: usize = 2;

fn caption(e: &IndexEntry, every: usize) -> String {
    let tags: String = if e.labels.is_empty() {
        r#"<span class="tag no">no label</span>"#.into()
    } else {
        e.labels.iter().map(|l| format!(r#"<span class="tag">{}</span> "#, t(&l.label))).collect()
    };
    let lapse = if every > 1 { format!(" · one frame in {every}") } else { String::new() };
    format!("episode {} · return {} · {} steps{lapse} {tags}", e.episode_id, crate::svg::num(e.ret), e.length)
}

/// A playable clip of decoded frames `f`, captioned (markup).
fn clip(f: &media::Frames, fps: u32, episode: u64, caption: &str) -> Result<String> {
    let src = media::clip(f, fps, episode)?;
    Ok(format!(
        r#"<figure><video controls muted loop playsinline preload="auto" src="{src}"></video><figcaption>{caption}</figcaption></figure>"#
    ))
}

/// The dataset's playback rate, within reason.
fn fps(ds: &Dataset) -> u32 {
    ds.metadata().env.render_fps.filter(|f| (1..=120).contains(f)).unwrap_or(30)
}

/// Clips of `episodes` for frame key `key`, in that order, each captioned by
/// `caption` (text; a time-lapse says so).
pub fn clips(
    ds: &Dataset,
    key: &str,
    episodes: &[&IndexEntry],
    m: &ReportMedia,
    caption: &dyn Fn(&IndexEntry) -> String,
) -> Result<String> {
    let mut out = String::new();
    for e in episodes {
        let f = media::read(ds, key, e, m.clip_frames)?;
        if f.rgb.is_empty() {
            continue;
        }
        let lapse = if f.every > 1 { format!(" · one frame in {}", f.every) } else { String::new() };
        out += &clip(&f, fps(ds), e.episode_id, &t(&(caption(e) + &lapse)))?;
    }
    Ok(format!(r#"<div class="clips">{out}</div>"#))
}

pub fn frames(ds: &Dataset, entries: &[&IndexEntry], m: &ReportMedia) -> Result<String> {
    let recorded: Vec<&IndexEntry> = entries.iter().copied().filter(|e| e.status != Status::GivenUp && e.rows > 0).collect();
    let (labelled, plain): (Vec<&IndexEntry>, Vec<&IndexEntry>) = recorded.iter().partition(|e| !e.labels.is_empty());
    let pick =
        |pool: &[&IndexEntry], n: usize| -> Vec<u64> { media::spread(pool.len(), n).into_iter().map(|i| pool[i].episode_id).collect() };
    let fps = fps(ds);
    let mut out = String::new();
    for key in ds.metadata().frame_keys.iter().take(KEYS) {
        out += &format!("<h3>{}</h3>", t(key));
        let strips: Vec<u64> = [pick(&labelled, STRIPS), pick(&plain, STRIPS)].concat();
        let clips: Vec<u64> = [pick(&labelled, CLIPS), pick(&plain, CLIPS)].concat();
        let mut strip_html = String::new();
        let mut clip_html = String::new();
        for e in recorded.iter().filter(|e| strips.contains(&e.episode_id) || clips.contains(&e.episode_id)) {
            let f = media::read(ds, key, e, m.clip_frames)?;
            if f.rgb.is_empty() {
                continue;
            }
            if strips.contains(&e.episode_id) {
                let imgs: String = media::thumbnails(&f, m.thumbs, e.episode_id)?
                    .iter()
                    .map(|src| format!(r#"<img alt="frame of episode {}" src="{src}">"#, e.episode_id))
                    .collect();
                strip_html += &format!(r#"<div class="strip"><div class="cap">{}</div>{imgs}</div>"#, caption(e, 1));
            }
            if clips.contains(&e.episode_id) {
                clip_html += &clip(&f, fps, e.episode_id, &caption(e, f.every))?;
            }
        }
        if strip_html.is_empty() {
            out += &note("No recorded episode has frames for this key.");
            continue;
        }
        out += &strip_html;
        out += &format!(r#"<div class="clips">{clip_html}</div>"#);
    }
    if labelled.is_empty() {
        out += &note("No episode is labelled, so every sample is unlabelled.");
    }
    Ok(out)
}
