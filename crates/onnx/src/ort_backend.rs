//! ONNX Runtime through `ort`, its library loaded at run time ([`crate::runtime`]).
//!
//! A process has one ONNX Runtime environment (the runtime's rule): the first
//! `onnx:` agent loads the library and makes it, later agents share it, and a
//! second library path in the same process is an error rather than a quiet
//! switch. Each agent has its own session, with `threads` intra-op threads and
//! one inter-op thread (a policy's graph is a chain: nothing to run beside it).

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use ort::environment::Environment;
use ort::ep::ExecutionProvider;
use ort::session::builder::GraphOptimizationLevel;
use ort::session::Session;
use ort::value::{DynValue, TensorElementType, ValueType};

use crate::backend::{Backend, Data, Elem, Port, Tensor};
use crate::Device;

/// The process's environment, and the library it was made from (kept only once
/// made: a wrong path may be followed by a right one).
static ENV: Mutex<Option<(Environment, PathBuf)>> = Mutex::new(None);

fn environment(lib: &Path) -> Result<Environment, String> {
    let mut made = ENV.lock().unwrap_or_else(|e| e.into_inner());
    if let Some((env, first)) = &*made {
        if first != lib {
            let (a, b) = (first.display(), lib.display());
            return Err(format!("this process already runs ONNX Runtime from {a}; it cannot load {b} as well"));
        }
        return Ok(env.clone());
    }
    let builder = ort::init_from(lib).map_err(|e| format!("could not load ONNX Runtime: {e}"))?;
    let env = builder.with_name("rollway").build().map_err(|e| format!("ONNX Runtime: {e}"))?;
    *made = Some((env.clone(), lib.to_path_buf()));
    Ok(env)
}

/// A model in an ONNX Runtime session.
pub(crate) struct Ort {
    session: Session,
    inputs: Vec<Port>,
    outputs: Vec<Port>,
    about: String,
}

fn port(name: &str, t: &ValueType) -> Port {
    let (elem, dims) = match t {
        ValueType::Tensor { ty, shape, .. } => {
            let elem = match ty {
                TensorElementType::Float32 => Elem::F32,
                TensorElementType::Float64 => Elem::F64,
                TensorElementType::Int64 => Elem::I64,
                TensorElementType::Int32 => Elem::I32,
                TensorElementType::Uint8 => Elem::U8,
                TensorElementType::Bool => Elem::Bool,
                other => Elem::Other(format!("{other:?}").to_lowercase()),
            };
            (elem, shape.iter().map(|&d| usize::try_from(d).ok()).collect())
        }
        other => (Elem::Other(format!("{other:?}")), Vec::new()),
    };
    Port { name: name.to_string(), elem, dims }
}

/// The runtime's version, from its file name (`libonnxruntime.so.1.32.0`).
fn version(lib: &Path) -> String {
    let name = lib.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    name.strip_prefix("libonnxruntime.so.").map_or_else(|| "(version unknown)".into(), str::to_string)
}

impl Ort {
    pub(crate) fn load(lib: &Path, model: &Path, threads: usize, device: Device) -> Result<Ort, String> {
        let env = environment(lib)?;
        let err = |e: ort::Error<_>| format!("ONNX Runtime: {e}");
        let mut builder = Session::builder(&env)
            .map_err(|e| format!("ONNX Runtime: {e}"))?
            .with_intra_threads(threads)
            .map_err(err)?
            .with_inter_threads(1)
            .map_err(err)?
            .with_optimization_level(GraphOptimizationLevel::All)
            .map_err(err)?;
        let cuda = match device {
            Device::Cpu => false,
            Device::Cuda => {
                ort::ep::CUDA::default().register(&mut builder).map_err(|e| {
                    format!(
                        "device=cuda: ONNX Runtime at {} could not start CUDA ({e}); onnxruntime-gpu and a GPU are needed",
                        lib.display()
                    )
                })?;
                // Nodes CUDA cannot run would otherwise go to the CPU unannounced.
                builder = builder.with_config_entry("session.disable_cpu_ep_fallback", "1").map_err(err)?;
                true
            }
            Device::Auto => ort::ep::CUDA::is_available().unwrap_or(false) && ort::ep::CUDA::default().register(&mut builder).is_ok(),
        };
        let session = builder.commit_from_file(model).map_err(|e| format!("ONNX Runtime could not load {}: {e}", model.display()))?;
        let inputs = session.inputs().iter().map(|o| port(o.name(), o.dtype())).collect();
        let outputs = session.outputs().iter().map(|o| port(o.name(), o.dtype())).collect();
        let device =
            if cuda { "CUDA (device 0)".to_string() } else { format!("CPU, {threads} thread{}", if threads == 1 { "" } else { "s" }) };
        let about = format!("ONNX Runtime {} ({}), {device}", version(lib), lib.display());
        Ok(Ort { session, inputs, outputs, about })
    }
}

fn value(t: Tensor) -> ort::Result<DynValue> {
    let shape: Vec<i64> = t.shape.iter().map(|&d| d as i64).collect();
    Ok(match t.data {
        Data::F32(v) => ort::value::Tensor::from_array((shape, v))?.into_dyn(),
        Data::F64(v) => ort::value::Tensor::from_array((shape, v))?.into_dyn(),
        Data::I64(v) => ort::value::Tensor::from_array((shape, v))?.into_dyn(),
        Data::I32(v) => ort::value::Tensor::from_array((shape, v))?.into_dyn(),
        Data::U8(v) => ort::value::Tensor::from_array((shape, v))?.into_dyn(),
        Data::Bool(v) => ort::value::Tensor::from_array((shape, v))?.into_dyn(),
    })
}

fn ours(v: &DynValue) -> Result<Tensor, String> {
    let err = |e: ort::Error| e.to_string();
    let ValueType::Tensor { ty, .. } = v.dtype() else { return Err(format!("an output of type {:?}, not a tensor", v.dtype())) };
    macro_rules! take {
        ($t:ty, $variant:ident) => {{
            let (shape, data) = v.try_extract_tensor::<$t>().map_err(err)?;
            (shape.iter().map(|&d| d as usize).collect(), Data::$variant(data.to_vec()))
        }};
    }
    let (shape, data) = match ty {
        TensorElementType::Float32 => take!(f32, F32),
        TensorElementType::Float64 => take!(f64, F64),
        TensorElementType::Int64 => take!(i64, I64),
        TensorElementType::Int32 => take!(i32, I32),
        TensorElementType::Uint8 => take!(u8, U8),
        TensorElementType::Bool => take!(bool, Bool),
        other => return Err(format!("an output of type {other:?}, which rollway does not read")),
    };
    Ok(Tensor { shape, data })
}

impl Backend for Ort {
    fn inputs(&self) -> &[Port] {
        &self.inputs
    }

    fn outputs(&self) -> &[Port] {
        &self.outputs
    }

    fn run(&mut self, inputs: Vec<Tensor>) -> Result<Vec<Tensor>, String> {
        let named = self.inputs.iter().zip(inputs).map(|(p, t)| Ok((p.name.clone(), value(t)?))).collect::<ort::Result<Vec<_>>>();
        let named = named.map_err(|e| format!("ONNX Runtime: {e}"))?;
        let outs = self.session.run(named).map_err(|e| format!("ONNX Runtime: {e}"))?;
        self.outputs.iter().map(|p| ours(&outs[p.name.as_str()])).collect()
    }

    fn describe(&self) -> String {
        self.about.clone()
    }
}
