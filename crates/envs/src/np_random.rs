//! numpy's default random stream, reproduced exactly: what
//! `gymnasium.utils.seeding.np_random(seed)` builds, i.e.
//! `np.random.Generator(np.random.PCG64(np.random.SeedSequence(seed)))`.
//!
//! Gymnasium envs draw their start states from that generator, so with the same
//! seed and the same draws in the same order, `reset(seed=s)` here starts exactly
//! where `gymnasium.make(id).reset(seed=s)` does. Three pieces, each written from
//! numpy's algorithm (`numpy/random/bit_generator.pyx`, `_pcg64.pyx`,
//! `src/pcg64/pcg64.h`, `_common.pxd`, `src/distributions/distributions.c`):
//!
//! - **SeedSequence.** An integer seed becomes 32-bit words, least significant
//!   first (`0` is one zero word). The words are hashed into a pool of four u32s
//!   (`hashmix` with a multiplier that evolves per call, then every pool word is
//!   mixed with a hash of every other, then entropy words past the fourth are mixed
//!   into every pool word). `generate_state` stretches the pool into output words
//!   with a second evolving hash. Missing pool words hash as zeros, so up to four
//!   words, trailing zero words change nothing: `[5]` and `[5, 0]` seed alike, and
//!   a u64 seed can always be passed as two words.
//! - **PCG64.** A 128-bit LCG with numpy's default multiplier and XSL-RR output.
//!   Seeding takes `generate_state(4, uint64)`: words 0–1 are the initial state
//!   (word 0 high), words 2–3 the stream selector (`inc = sel << 1 | 1`), set up by
//!   PCG's `srandom`: step from state 0, add the initial state, step again. Each
//!   draw steps first, then outputs.
//! - **Doubles.** `next_double` keeps the top 53 bits: `(x >> 11) * 2^-53`, in
//!   `[0, 1)`; `uniform(low, high)` is `low + (high - low) * u` with the product
//!   rounded before the sum. That matters: a fused multiply-add changes the last
//!   bit of about a third of draws, and numpy's x86-64 wheels do not fuse (the
//!   golden vectors pin it; a numpy built with FP contraction, possible on aarch64,
//!   would differ). `uniform(size=n)` and array bounds draw elements in order, one
//!   double each.
//!
//! Cost: seeding is a few dozen 32-bit multiply-xorshift rounds plus two LCG steps
//! (tens of nanoseconds, once per seeded reset, no allocation); a draw is one
//! 128-bit multiply-add and a rotate. The generator is 32 bytes and deliberately
//! not `Copy`: an implicit copy would silently replay draws.
//!
//! Not reproduced: numpy's `next_uint32` buffering (unused by the envs), spawn keys
//! and pool sizes other than 4, and unseeded construction from OS entropy.

/// SeedSequence constants: the hash of entropy into the pool (`A`), of the pool
/// into output words (`B`), and the pool mixing.
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_A: u32 = 0x931e_8875;
const INIT_B: u32 = 0x8b51_f9dd;
const MULT_B: u32 = 0x58f3_8ded;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
/// Half the bits of a u32.
const XSHIFT: u32 = 16;
/// numpy's default pool size, in u32 words.
const POOL_SIZE: usize = 4;

/// PCG's default 128-bit multiplier (numpy's `PCG_DEFAULT_MULTIPLIER_128`).
const PCG_MULT: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

/// 2^-53: one unit in the last place of a double in `[0.5, 1)`.
const DOUBLE_UNIT: f64 = 1.0 / 9_007_199_254_740_992.0;

/// The 32-bit words numpy makes of a non-negative integer seed, least significant
/// first, as many as the value needs (`0` is one zero word).
pub fn seed_words(seed: u64) -> Vec<u32> {
    let (lo, hi) = (seed as u32, (seed >> 32) as u32);
    if hi == 0 {
        vec![lo]
    } else {
        vec![lo, hi]
    }
}

/// One round of SeedSequence's `hashmix`; `mult` evolves with every call, which
/// is what makes the same value hash differently at different positions.
fn hashmix(value: u32, mult: &mut u32) -> u32 {
    let mut v = value ^ *mult;
    *mult = mult.wrapping_mul(MULT_A);
    v = v.wrapping_mul(*mult);
    v ^ (v >> XSHIFT)
}

/// SeedSequence's `mix` of a pool word `x` with a hashed word `y`.
fn mix(x: u32, y: u32) -> u32 {
    let r = MIX_MULT_L.wrapping_mul(x).wrapping_sub(MIX_MULT_R.wrapping_mul(y));
    r ^ (r >> XSHIFT)
}

/// `SeedSequence(entropy).pool` for entropy given as u32 words (no spawn key).
fn pool_of(entropy: &[u32]) -> [u32; POOL_SIZE] {
    let mut mult = INIT_A;
    let mut pool = [0u32; POOL_SIZE];
    // Missing words hash as zeros, so short entropy still fills the pool.
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0), &mut mult);
    }
    // Every word mixed with every other, so late words affect early ones; the
    // order matters (sources outer, destinations inner, updated in place).
    for src in 0..POOL_SIZE {
        for dst in 0..POOL_SIZE {
            if src != dst {
                let h = hashmix(pool[src], &mut mult);
                pool[dst] = mix(pool[dst], h);
            }
        }
    }
    for &word in entropy.iter().skip(POOL_SIZE) {
        for p in pool.iter_mut() {
            *p = mix(*p, hashmix(word, &mut mult));
        }
    }
    pool
}

/// `SeedSequence.generate_state(N, uint32)`: output words from the cycled pool.
fn generate_state<const N: usize>(pool: &[u32; POOL_SIZE]) -> [u32; N] {
    let mut mult = INIT_B;
    let mut out = [0u32; N];
    for (o, &p) in out.iter_mut().zip(pool.iter().cycle()) {
        let mut v = p ^ mult;
        mult = mult.wrapping_mul(MULT_B);
        v = v.wrapping_mul(mult);
        *o = v ^ (v >> XSHIFT);
    }
    out
}

/// numpy's `PCG64` bit generator with `Generator`'s float draws.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NpRandom {
    state: u128,
    inc: u128,
}

impl NpRandom {
    /// The stream of `gymnasium.utils.seeding.np_random(seed)`, i.e.
    /// `np.random.PCG64(np.random.SeedSequence(seed))`.
    pub fn new(seed: u64) -> NpRandom {
        let (lo, hi) = (seed as u32, (seed >> 32) as u32);
        // Inline `seed_words` without allocating: a zero high word hashes like a
        // missing one, so `[lo, 0]` gives the pool of `[lo]`.
        NpRandom::from_pool(&pool_of(&[lo, hi]))
    }

    /// The stream of `PCG64(SeedSequence(n))` for an integer `n` of any width,
    /// given as its 32-bit words, least significant first (numpy's
    /// `_int_to_uint32_array(n)`; a sequence of u32s given to SeedSequence directly
    /// is used the same way).
    pub fn from_entropy_words(words: &[u32]) -> NpRandom {
        NpRandom::from_pool(&pool_of(words))
    }

    fn from_pool(pool: &[u32; POOL_SIZE]) -> NpRandom {
        // generate_state(4, uint64) is 8 u32 words read as little-endian u64 pairs.
        let w = generate_state::<8>(pool);
        let u = |i: usize| u64::from(w[2 * i]) | (u64::from(w[2 * i + 1]) << 32);
        let seed = (u128::from(u(0)) << 64) | u128::from(u(1));
        let sel = (u128::from(u(2)) << 64) | u128::from(u(3));
        NpRandom::from_pcg_seed(seed, sel)
    }

    /// numpy's `pcg64_set_seed(seed, inc)` (PCG's `srandom`): `inc` selects the stream.
    pub fn from_pcg_seed(seed: u128, inc: u128) -> NpRandom {
        let mut r = NpRandom { state: 0, inc: (inc << 1) | 1 };
        r.step();
        r.state = r.state.wrapping_add(seed);
        r.step();
        r
    }

    #[inline]
    fn step(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// numpy's `next_uint64` (`random_raw`): step, then XSL-RR output of the new state.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        self.step();
        let hi = (self.state >> 64) as u64;
        let lo = self.state as u64;
        (hi ^ lo).rotate_right((self.state >> 122) as u32)
    }

    /// numpy's `next_double` (`Generator.random()`): the top 53 bits, in `[0, 1)`.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * DOUBLE_UNIT
    }

    /// numpy's `Generator.uniform(low, high)` for one element: `low + (high - low) * u`.
    /// numpy rejects a non-finite `high - low`; callers check their bounds.
    #[inline]
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.next_f64()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `np.random.PCG64(np.random.SeedSequence(0)).random_raw(3)` (numpy 2.4).
    #[test]
    fn seed_zero_matches_numpy() {
        let mut r = NpRandom::new(0);
        let raw: Vec<u64> = (0..3).map(|_| r.next_u64()).collect();
        assert_eq!(raw, [11749869230777074271, 4976686463289251617, 755828109848996024]);
        // `np.random.default_rng(0).random()`, the well-known first double.
        assert_eq!(NpRandom::new(0).next_f64(), 0.6369616873214543);
    }

    #[test]
    fn seed_words_match_numpy() {
        assert_eq!(seed_words(0), [0]);
        assert_eq!(seed_words(42), [42]);
        assert_eq!(seed_words(1 << 32), [0, 1]);
        assert_eq!(seed_words(u64::MAX), [u32::MAX, u32::MAX]);
        // A zero high word hashes like no word, so `new` may always pass two.
        for s in [0, 7, u64::from(u32::MAX), 1 << 32, u64::MAX] {
            assert_eq!(NpRandom::new(s), NpRandom::from_entropy_words(&seed_words(s)), "seed {s}");
        }
    }

    #[test]
    fn doubles_are_in_range_and_use_53_bits() {
        let mut r = NpRandom::new(5);
        for _ in 0..10_000 {
            let u = r.next_f64();
            assert!((0.0..1.0).contains(&u));
            assert_eq!(u * 9_007_199_254_740_992.0, (u * 9_007_199_254_740_992.0).trunc());
        }
        // The largest output is 1 - 2^-53, never 1.
        assert!(((u64::MAX >> 11) as f64 * DOUBLE_UNIT) < 1.0);
        assert_eq!(NpRandom::new(5).uniform(2.5, 2.5), 2.5);
    }
}
