//! Property tests over spaces: JSON round trips, samples are contained, row
//! layouts round-trip values, and the JSON reader never panics on mangled input.

use proptest::prelude::*;
use rand::SeedableRng;
use rollway_core::{DType, Layout, Rows, Space};

fn dtype() -> impl Strategy<Value = DType> {
    prop::sample::select(vec![DType::U8, DType::I8, DType::I16, DType::I32, DType::I64, DType::F32, DType::F64])
}

fn leaf() -> impl Strategy<Value = Space> {
    prop_oneof![
        (dtype(), prop::collection::vec(1usize..4, 0..3), -100i32..100, 0i32..100, any::<bool>()).prop_map(|(dt, shape, lo, span, inf)| {
            let (lo, hi) = if dt.is_float() && inf { (f64::NEG_INFINITY, f64::INFINITY) } else { (lo as f64, (lo + span) as f64) };
            let (dmin, dmax) = dt.range();
            let (lo, hi) = (lo.clamp(dmin, dmax), hi.clamp(dmin, dmax));
            Space::boxed(dt, &shape, lo, hi.max(lo)).unwrap()
        }),
        (1u64..50, -5i64..5).prop_map(|(n, s)| Space::discrete(n, s).unwrap()),
        prop::collection::vec(1i64..9, 1..4).prop_map(|nvec| Space::multi_discrete(nvec, vec![]).unwrap()),
        prop::collection::vec(1usize..4, 1..3).prop_map(|shape| Space::MultiBinary { shape }),
        (0usize..4, 1usize..6, "[a-zé \"\\\\]{1,8}").prop_map(|(min, extra, cs)| Space::text(min, min + extra, &cs).unwrap()),
    ]
}

fn space() -> impl Strategy<Value = Space> {
    leaf().prop_recursive(2, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 1..4).prop_map(Space::Tuple),
            prop::collection::btree_map("[a-z]{1,6}", inner, 1..4).prop_map(|m| Space::dict(m.into_iter().collect()).unwrap()),
        ]
    })
}

proptest! {
    #[test]
    fn json_round_trips(s in space()) {
        prop_assert_eq!(Space::from_json(&s.to_json()).unwrap(), s);
    }

    #[test]
    fn samples_are_contained_and_rows_round_trip(s in space(), seed in any::<u64>()) {
        let mut rng = rand_pcg::Pcg64Mcg::seed_from_u64(seed);
        let layout = Layout::of(&s);
        let mut rows = Rows::new(layout.row_bytes(), 2);
        for _ in 0..5 {
            let v = s.sample(&mut rng);
            prop_assert!(s.contains(&v));
            layout.write_value(&v, rows.row_mut(0)).unwrap();
            prop_assert!(layout.contains_row(rows.row(0)));
            prop_assert_eq!(layout.read_value(rows.row(0)), v);
            layout.sample_row(&mut rng, rows.row_mut(1));
            prop_assert!(s.contains(&layout.read_value(rows.row(1))));
        }
    }

    /// Space JSON comes from dataset files, i.e. untrusted bytes: any mangling must
    /// give an error or a valid space, never a panic.
    #[test]
    fn mangled_json_never_panics(s in space(), cut in any::<prop::sample::Index>(), pos in any::<prop::sample::Index>(), byte in any::<u8>()) {
        let text = s.to_json();
        let mut bytes = text.into_bytes();
        let i = pos.index(bytes.len());
        bytes[i] = byte;
        bytes.truncate(cut.index(bytes.len() + 1).max(1));
        let mangled = String::from_utf8_lossy(&bytes);
        let _ = Space::from_json(&mangled);
    }
}
