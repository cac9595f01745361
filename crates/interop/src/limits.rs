//! Caps on the sizes that input files declare. Shapes, counts and lengths in a
//! file we did not write are checked before they size an allocation or enter
//! arithmetic, so a hostile or damaged file is an error, never an overflow, a
//! "capacity overflow" panic or an allocation abort.

/// The most elements one array may declare: above any real episode column or
/// feature (10,000 frames of 256×256×3 are 2^31), far below what no allocation can hold.
pub(crate) const MAX_ELEMENTS: usize = 1 << 32;

/// The product of `dims`, when it is at most `MAX_ELEMENTS`.
pub(crate) fn elements(dims: &[usize]) -> Result<usize, String> {
    dims.iter()
        .try_fold(1usize, |n, &d| n.checked_mul(d))
        .filter(|&n| n <= MAX_ELEMENTS)
        .ok_or_else(|| format!("shape {dims:?} declares more than {MAX_ELEMENTS} elements"))
}

/// `a × b`, when it does not overflow.
pub(crate) fn mul(a: usize, b: usize) -> Result<usize, String> {
    a.checked_mul(b).ok_or_else(|| format!("{a} × {b} overflows"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn huge_shapes_are_errors() {
        assert_eq!(elements(&[2, 3, 4]), Ok(24));
        assert_eq!(elements(&[]), Ok(1));
        assert!(elements(&[1 << 33]).is_err());
        assert!(elements(&[1 << 40, 1 << 40, 0]).is_err(), "overflow before the zero");
        assert!(mul(usize::MAX, 2).is_err());
    }
}
