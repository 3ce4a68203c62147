//! The explanation's data: for each highlighted option of a training plan (the best, the
//! fastest, the cheapest of each method), what its device memory is made of (model
//! states per parameter, the whole model's states, what sharding leaves on each device)
//! and the next cheaper configuration with what it lacks. Computed with the train
//! module; `ridgeline::report::train_plan` writes the sentences.

use super::search::{self, Cand};
use super::{Lack, TrainEntry, TrainPlanRequest};
use crate::error::Result;
use crate::train::{Offload, Recompute, TrainConfig, Trainer};
use serde::Serialize;

crate::named_enum! {
    /// Why an option is highlighted.
    pub enum OptionRole: "plan option" {
        /// The cheapest configuration that qualifies.
        Best = "best",
        /// The fastest configuration that qualifies.
        Fastest = "fastest",
        /// The cheapest that qualifies with its method.
        Cheapest = "cheapest",
    }
}

/// The next cheaper configuration than an option and what it lacks.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct NextCheaper {
    /// The configuration.
    pub entry: TrainEntry,
    /// What it lacks (`None`: it qualifies too, and is slower).
    pub lack: Option<Lack>,
}

/// One highlighted option and what binds it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct OptionStory {
    /// Why it is highlighted.
    pub role: OptionRole,
    /// The configuration.
    pub entry: TrainEntry,
    /// Parameters of the model.
    pub params: u64,
    /// Parameters trained (all, or the adapters).
    pub trainable_params: f64,
    /// Model states (weights, gradients, optimizer states) of the whole model on one
    /// device without sharding, over its parameters: 16 bytes for full training with
    /// AdamW (2 + 2 + 12), about 2 for LoRA, about 0.5 for QLoRA.
    pub state_bytes_per_param: f64,
    /// Those model states, bytes.
    pub model_states_bytes: f64,
    /// Model states on the most loaded device after tensor, pipeline and ZeRO sharding
    /// and offload, bytes.
    pub states_per_device_bytes: f64,
    /// Optimizer states per device in host memory (offload), bytes.
    pub host_states_per_device_bytes: f64,
    /// Stored activations per device at its micro-batch, bytes.
    pub activations_bytes: f64,
    /// Framework overhead per device, bytes.
    pub overhead_bytes: f64,
    /// The next cheaper configuration (of the same method for `cheapest`, of any
    /// otherwise) and what it lacks; `None`: nothing is cheaper.
    pub next_cheaper: Option<NextCheaper>,
}

/// The highlighted options: best, fastest, then the cheapest feasible of each method,
/// each once.
pub(super) fn options<'c>(
    req: &TrainPlanRequest,
    cands: &'c [Cand],
    feasible: &[&'c Cand],
    best: Option<&'c Cand>,
    fastest: Option<&'c Cand>,
) -> Result<Vec<OptionStory>> {
    let mut picked: Vec<(OptionRole, &'c Cand)> = Vec::new();
    let mut add = |role: OptionRole, c: Option<&'c Cand>| {
        if let Some(c) = c
            && !picked.iter().any(|(_, p)| std::ptr::eq(*p, c))
        {
            picked.push((role, c));
        }
    };
    add(OptionRole::Best, best);
    add(OptionRole::Fastest, fastest);
    for &m in &req.methods {
        let of_method: Vec<&Cand> = feasible
            .iter()
            .copied()
            .filter(|c| c.opt.method == m)
            .collect();
        add(OptionRole::Cheapest, search::best(&of_method).0);
    }
    picked
        .into_iter()
        .map(|(role, c)| story(req, cands, c, role))
        .collect()
}

/// The story of one option.
fn story(
    req: &TrainPlanRequest,
    cands: &[Cand],
    c: &Cand,
    role: OptionRole,
) -> Result<OptionStory> {
    let pool = &req.pools[c.layout.pool];
    let t = Trainer::new(&req.model, &pool.hardware, &c.setting().config(&req.base))?;
    let (m, d) = t.memory_at(c.micro_batch);
    // the same method on one device: nothing sharded, nothing offloaded
    let whole_cfg = TrainConfig {
        gpus: 1,
        tp: 1,
        pp: 1,
        zero: 0,
        micro_batch: 1,
        global_batch: None,
        method: c.opt.method,
        recompute: Recompute::None,
        offload: Offload::None,
        virtual_stages: 1,
        ..req.base.clone()
    };
    let whole = Trainer::new(&req.model, &pool.hardware, &whole_cfg)?;
    let model_states = whole.memory_at(1).0.model_states_bytes();
    let params = req.model.params().total;
    let same_method = role == OptionRole::Cheapest;
    let next = cands
        .iter()
        .filter(|n| n.cost() < c.cost() && (!same_method || n.opt.method == c.opt.method))
        .max_by(|a, b| {
            a.cost()
                .total_cmp(&b.cost())
                .then(b.layout.gpus.cmp(&a.layout.gpus))
        });
    Ok(OptionStory {
        role,
        entry: c.entry(&req.pools),
        params,
        trainable_params: t.trainable_params(),
        state_bytes_per_param: model_states / params.max(1) as f64,
        model_states_bytes: model_states,
        states_per_device_bytes: m.model_states_bytes(),
        host_states_per_device_bytes: d.host_optimizer_bytes,
        activations_bytes: m.activations_bytes,
        overhead_bytes: m.overhead_bytes,
        next_cheaper: next.map(|n| NextCheaper {
            entry: n.entry(&req.pools),
            lack: n.lack(&req.targets),
        }),
    })
}
