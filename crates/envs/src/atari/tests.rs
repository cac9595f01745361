//! The preprocessing's order against a scripted emulator; its equality with
//! Gymnasium's wrappers on ALE itself is tested from Python (`tests/python/test_atari.py`).

use super::*;

/// Frame `n`'s screen is all `n`; a scripted game ends (or loses a life) at given frames.
struct Script {
    frame: u8,
    over_at: Option<u8>,
    life_lost_at: Option<u8>,
    rewards: Vec<f64>,
}

impl Emulator for Script {
    type Error = String;
    fn act(&mut self, _action: usize) -> Result<f64, String> {
        self.frame += 1;
        Ok(self.rewards.get(usize::from(self.frame) - 1).copied().unwrap_or(0.0))
    }
    fn ended(&mut self) -> Result<(bool, bool), String> {
        Ok((self.over_at == Some(self.frame), false))
    }
    fn lives(&mut self) -> Result<i64, String> {
        Ok(if self.life_lost_at.is_some_and(|f| self.frame >= f) { 2 } else { 3 })
    }
    fn screen(&mut self, out: &mut [u8]) -> Result<(), String> {
        out.fill(self.frame * 10);
        Ok(())
    }
}

fn settings() -> Preprocessing {
    Preprocessing {
        frame_skip: 4,
        screen: (20, 16),
        size: 4,
        stack: 3,
        terminal_on_life_loss: false,
        episodic_life: false,
        reward_clip: false,
    }
}

fn script() -> Script {
    Script { frame: 0, over_at: None, life_lost_at: None, rewards: vec![] }
}

/// The stack's frames, each told by its first pixel.
fn frames(obs: &[u8]) -> Vec<u8> {
    obs.chunks_exact(16).map(|f| f[0]).collect()
}

#[test]
fn reset_repeats_its_frame_and_steps_push_the_max_of_the_last_two() {
    let (mut f, mut emu) = (Frames::new(settings()), script());
    let mut obs = vec![0u8; settings().obs_bytes()];
    f.reset(&mut emu, &mut obs).unwrap();
    assert_eq!(frames(&obs), [0, 0, 0]);
    f.step(&mut emu, 0, &mut obs).unwrap();
    // Frames 3 and 4 are pooled: max(30, 40).
    assert_eq!(frames(&obs), [0, 0, 40]);
    f.step(&mut emu, 0, &mut obs).unwrap();
    assert_eq!(frames(&obs), [0, 40, 80]);
}

#[test]
fn an_episode_ending_inside_the_skip_leaves_the_screens_as_they_were() {
    let (mut f, mut emu) = (Frames::new(settings()), Script { over_at: Some(6), ..script() });
    let mut obs = vec![0u8; settings().obs_bytes()];
    f.reset(&mut emu, &mut obs).unwrap();
    f.step(&mut emu, 0, &mut obs).unwrap();
    let out = f.step(&mut emu, 0, &mut obs).unwrap();
    assert!(out.terminated && !out.truncated);
    // No screen was read in the second step: the stale pooled frame comes again.
    assert_eq!(frames(&obs), [0, 40, 40]);
}

#[test]
fn life_loss_terminates_only_when_asked_and_rewards_clip_to_their_sign() {
    let p = Preprocessing { terminal_on_life_loss: true, reward_clip: true, ..settings() };
    let (mut f, mut emu) = (Frames::new(p), Script { life_lost_at: Some(2), rewards: vec![0.0, 3.0, 2.0], ..script() });
    let mut obs = vec![0u8; p.obs_bytes()];
    f.reset(&mut emu, &mut obs).unwrap();
    let out = f.step(&mut emu, 0, &mut obs).unwrap();
    assert_eq!(out, Step { reward: 1.0, terminated: true, ..Step::default() }, "a life, not the game");
    assert_eq!(emu.frame, 2, "the skip stops at the lost life");

    let (mut f, mut emu) = (Frames::new(settings()), Script { life_lost_at: Some(2), rewards: vec![0.0, 3.0, 2.0], ..script() });
    f.reset(&mut emu, &mut obs).unwrap();
    assert_eq!(f.step(&mut emu, 0, &mut obs).unwrap(), Step { reward: 5.0, ..Step::default() });
}

#[test]
fn episodic_life_ends_the_episode_after_the_whole_step_and_the_game_goes_on() {
    let p = Preprocessing { episodic_life: true, reward_clip: true, ..settings() };
    let rewards = vec![0.0, 3.0, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0];
    let (mut f, mut emu) = (Frames::new(p), Script { life_lost_at: Some(2), over_at: Some(11), rewards, ..script() });
    let mut obs = vec![0u8; p.obs_bytes()];
    assert!(!f.game_goes_on(), "no game yet");
    f.reset(&mut emu, &mut obs).unwrap();
    let out = f.step(&mut emu, 0, &mut obs).unwrap();
    assert_eq!(out, Step { reward: 1.0, terminated: true, ..Step::default() });
    assert_eq!(emu.frame, 4, "the whole skip is played: the life is checked after it");
    assert!(f.game_goes_on());
    let out = f.go_on(&mut emu, &mut obs).unwrap();
    assert!(!out.game_over && emu.frame == 8, "a NOOP step from where the life was lost");
    let out = f.step(&mut emu, 0, &mut obs).unwrap();
    assert!(out.terminated && out.game_over, "the game ends at frame 11");
    assert_eq!(out.game, Some((9.0, 3)), "the game's raw return and its steps, the NOOP one included");
    assert!(!f.game_goes_on());
    f.reset(&mut emu, &mut obs).unwrap();
    let out = f.step(&mut emu, 0, &mut obs).unwrap();
    assert_eq!((out.game, f.game_goes_on()), (None, true), "a new game, under way");
}

#[test]
fn restack_pads_the_stack_with_its_newest_frame() {
    let (mut f, mut emu) = (Frames::new(settings()), script());
    let mut obs = vec![0u8; settings().obs_bytes()];
    f.reset(&mut emu, &mut obs).unwrap();
    f.step(&mut emu, 1, &mut obs).unwrap();
    f.step(&mut emu, 2, &mut obs).unwrap();
    assert_eq!(frames(&obs), [0, 40, 80]);
    f.restack(&mut obs);
    assert_eq!(frames(&obs), [80, 80, 80]);
    f.step(&mut emu, 0, &mut obs).unwrap();
    assert_eq!(frames(&obs), [80, 80, 120], "the next step pushes onto the padded stack");
}
