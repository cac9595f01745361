//! tract: the pure-Rust engine, used where no ONNX Runtime is found (or with
//! `backend=tract`). It runs on the CPU, on one thread, and covers the operators
//! of MLPs, CNNs (Conv, pooling, BatchNormalization with constant statistics) and
//! recurrent cells (LSTM/GRU, and the gate arithmetic `LSTMCell` exports to); an
//! operator it lacks is reported when the model loads, before the run. ONNX
//! Runtime is the faster engine for large convolutional models
//! (bench/RESULTS.md, "ONNX policies").

use std::path::Path;
use std::sync::Arc;

use tract_onnx::prelude::*;
use tract_onnx::tract_hir::infer::GenericFactoid;

use crate::backend::{Backend, Data, Elem, Port, Tensor as T};

/// A model optimized by tract, ready to run at any batch size.
pub(crate) struct Tract {
    plan: Arc<TypedRunnableModel>,
    inputs: Vec<Port>,
    outputs: Vec<Port>,
    /// Why ONNX Runtime did not run the model, when `backend=auto` fell back here.
    pub(crate) why: Option<String>,
}

fn elem(dt: DatumType) -> Elem {
    match dt {
        DatumType::F32 => Elem::F32,
        DatumType::F64 => Elem::F64,
        DatumType::I64 => Elem::I64,
        DatumType::I32 => Elem::I32,
        DatumType::U8 => Elem::U8,
        DatumType::Bool => Elem::Bool,
        other => Elem::Other(format!("{other:?}").to_lowercase()),
    }
}

fn dim(d: &TDim) -> Option<usize> {
    d.as_i64().and_then(|v| usize::try_from(v).ok())
}

impl Tract {
    pub(crate) fn load(path: &Path) -> Result<Tract, String> {
        let fail = |e: TractError| format!("tract could not load {}: {e:#}", path.display());
        let model = tract_onnx::onnx().model_for_path(path).map_err(fail)?;
        let mut inputs = Vec::new();
        for (i, o) in model.input_outlets().map_err(fail)?.iter().enumerate() {
            let fact = model.input_fact(i).map_err(fail)?;
            let dims = fact.shape.dims().map(|d| if let GenericFactoid::Only(d) = d { dim(d) } else { None }).collect();
            let elem = fact.datum_type().map_or(Elem::Other("unknown".into()), elem);
            inputs.push(Port { name: model.node(o.node).name.clone(), elem, dims });
        }
        let names: Vec<String> = model
            .output_outlets()
            .map_err(fail)?
            .iter()
            .map(|o| model.outlet_label(*o).map_or_else(|| model.node(o.node).name.clone(), str::to_string))
            .collect();
        let typed = model.into_optimized().map_err(fail)?;
        let mut outputs = Vec::new();
        for (i, name) in names.into_iter().enumerate() {
            let fact = typed.output_fact(i).map_err(fail)?;
            outputs.push(Port { name, elem: elem(fact.datum_type), dims: fact.shape.dims().iter().map(dim).collect() });
        }
        // The batch axis stays symbolic in the typed model: report it as such.
        let plan = typed.into_runnable().map_err(fail)?;
        Ok(Tract { plan, inputs, outputs, why: None })
    }
}

fn tensor(t: T) -> TractResult<Tensor> {
    match t.data {
        Data::F32(v) => Tensor::from_shape(&t.shape, &v),
        Data::F64(v) => Tensor::from_shape(&t.shape, &v),
        Data::I64(v) => Tensor::from_shape(&t.shape, &v),
        Data::I32(v) => Tensor::from_shape(&t.shape, &v),
        Data::U8(v) => Tensor::from_shape(&t.shape, &v),
        Data::Bool(v) => Tensor::from_shape(&t.shape, &v),
    }
}

fn ours(t: &Tensor) -> TractResult<T> {
    let view = t.try_as_plain_ram()?;
    let data = match t.datum_type() {
        DatumType::F32 => Data::F32(view.as_slice::<f32>()?.to_vec()),
        DatumType::F64 => Data::F64(view.as_slice::<f64>()?.to_vec()),
        DatumType::I64 => Data::I64(view.as_slice::<i64>()?.to_vec()),
        DatumType::I32 => Data::I32(view.as_slice::<i32>()?.to_vec()),
        DatumType::U8 => Data::U8(view.as_slice::<u8>()?.to_vec()),
        DatumType::Bool => Data::Bool(view.as_slice::<bool>()?.to_vec()),
        other => return Err(TractError::msg(format!("an output of type {other:?}, which rollway does not read"))),
    };
    Ok(T { shape: t.shape().to_vec(), data })
}

impl Backend for Tract {
    fn inputs(&self) -> &[Port] {
        &self.inputs
    }

    fn outputs(&self) -> &[Port] {
        &self.outputs
    }

    fn run(&mut self, inputs: Vec<T>) -> Result<Vec<T>, String> {
        let run = || -> TractResult<Vec<T>> {
            let ins = inputs.into_iter().map(|t| tensor(t).map(IntoTValue::into_tvalue)).collect::<TractResult<TVec<_>>>()?;
            self.plan.run(ins)?.iter().map(|v| ours(v)).collect()
        };
        run().map_err(|e| format!("tract: {e:#}"))
    }

    fn describe(&self) -> String {
        let why = self.why.as_ref().map_or(String::new(), |w| format!(" (not ONNX Runtime: {w})"));
        format!("tract 0.23 (pure Rust), CPU, 1 thread{why}")
    }
}
