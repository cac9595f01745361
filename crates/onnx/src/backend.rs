//! What the agent asks of an inference engine, and the plain tensors it passes.
//!
//! Both engines (ONNX Runtime through `ort`, tract) are reached through
//! [`Backend`]: the model's input and output [`Port`]s, read once when the model
//! loads, and `run`, which takes one owned [`Tensor`] per input (in the model's
//! input order) and gives every output back (in the model's output order). Owned
//! vectors cost one copy of a batch's observations per call; that copy is a few
//! microseconds against any network's forward pass (bench/RESULTS.md, "ONNX
//! policies", times both), and it keeps the engines' own tensor types out of the
//! binding code, which is the same for both.

/// The element type of a model's input or output.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Elem {
    /// float32.
    F32,
    /// float64.
    F64,
    /// int64.
    I64,
    /// int32.
    I32,
    /// uint8.
    U8,
    /// bool.
    Bool,
    /// Anything else, by name (float16, strings…): refused where it is used.
    Other(String),
}

impl Elem {
    /// Its ONNX name.
    pub fn name(&self) -> &str {
        match self {
            Elem::F32 => "float32",
            Elem::F64 => "float64",
            Elem::I64 => "int64",
            Elem::I32 => "int32",
            Elem::U8 => "uint8",
            Elem::Bool => "bool",
            Elem::Other(s) => s,
        }
    }
}

/// A model input or output as the model declares it.
#[derive(Clone, Debug, PartialEq)]
pub struct Port {
    /// Its name in the graph.
    pub name: String,
    /// Its element type.
    pub elem: Elem,
    /// Its dimensions; `None` for a symbolic one (a batch axis exported as dynamic).
    pub dims: Vec<Option<usize>>,
}

impl Port {
    /// `name[n,4]`-style description; symbolic dims print as `?`.
    pub fn describe(&self) -> String {
        let dims: Vec<String> = self.dims.iter().map(|d| d.map_or("?".into(), |d| d.to_string())).collect();
        format!("`{}` {}[{}]", self.name, self.elem.name(), dims.join(","))
    }
}

/// A tensor's values, by element type.
#[derive(Clone, Debug, PartialEq)]
pub enum Data {
    /// float32 values.
    F32(Vec<f32>),
    /// float64 values.
    F64(Vec<f64>),
    /// int64 values.
    I64(Vec<i64>),
    /// int32 values.
    I32(Vec<i32>),
    /// uint8 values.
    U8(Vec<u8>),
    /// bool values.
    Bool(Vec<bool>),
}

impl Data {
    /// Zeros of `elem`, `len` of them (`None` for an element type no input may have).
    pub fn zeros(elem: &Elem, len: usize) -> Option<Data> {
        Some(match elem {
            Elem::F32 => Data::F32(vec![0.0; len]),
            Elem::F64 => Data::F64(vec![0.0; len]),
            Elem::I64 => Data::I64(vec![0; len]),
            Elem::I32 => Data::I32(vec![0; len]),
            Elem::U8 => Data::U8(vec![0; len]),
            Elem::Bool => Data::Bool(vec![false; len]),
            Elem::Other(_) => return None,
        })
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Data::F32(v) => v.len(),
            Data::F64(v) => v.len(),
            Data::I64(v) => v.len(),
            Data::I32(v) => v.len(),
            Data::U8(v) => v.len(),
            Data::Bool(v) => v.len(),
        }
    }

    /// True when it holds no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Sets value `i` from a float (rounded by `as` for integer types; nonzero is true).
    #[inline]
    pub fn set(&mut self, i: usize, x: f64) {
        match self {
            Data::F32(v) => v[i] = x as f32,
            Data::F64(v) => v[i] = x,
            Data::I64(v) => v[i] = x as i64,
            Data::I32(v) => v[i] = x as i32,
            Data::U8(v) => v[i] = x as u8,
            Data::Bool(v) => v[i] = x != 0.0,
        }
    }

    /// Value `i` as a float.
    #[inline]
    pub fn get(&self, i: usize) -> f64 {
        match self {
            Data::F32(v) => f64::from(v[i]),
            Data::F64(v) => v[i],
            Data::I64(v) => v[i] as f64,
            Data::I32(v) => f64::from(v[i]),
            Data::U8(v) => f64::from(v[i]),
            Data::Bool(v) => f64::from(u8::from(v[i])),
        }
    }
}

/// A dense row-major tensor.
#[derive(Clone, Debug, PartialEq)]
pub struct Tensor {
    /// Its shape.
    pub shape: Vec<usize>,
    /// Its values, `shape.iter().product()` of them.
    pub data: Data,
}

/// An inference engine with one model loaded.
pub trait Backend: Send {
    /// The model's inputs, in its order.
    fn inputs(&self) -> &[Port];
    /// The model's outputs, in its order.
    fn outputs(&self) -> &[Port];
    /// Runs the model on one tensor per input (in [`Backend::inputs`] order) and
    /// returns every output (in [`Backend::outputs`] order).
    fn run(&mut self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String>;
    /// What runs the model, for the run's summary: engine, version, device, threads.
    fn describe(&self) -> String;
}
