//! Predicting many cases at once.
//!
//! Rows that ask for the same prediction (the same device, model, scenario, batch and
//! target: one configuration measured by several sources, or measured again) are
//! predicted once ([`Distinct`]), the distinct ones in parallel. A fit predicts the
//! same cases under engines that differ only in a few speed factors, dozens of times;
//! [`Memo`] keeps each case's recent predictions by the factors it depends on (its
//! device's memory efficiency, the compute efficiency, the overheads), so a Jacobian
//! column that moves one memory group's efficiency predicts only that group's cases
//! again, and an engine met before (the fit's start, its optimum) is not predicted
//! again at all. Predictions are pure functions of their inputs: the numbers are those
//! of one [`predict_case`] per case.

use super::{BatchSpec, Case, predict_case};
use crate::engine::{DeviceOverride, Engine, Overheads, Speed};
use crate::error::Result;
use rayon::prelude::*;
use std::cell::RefCell;
use std::collections::HashMap;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::mem::discriminant;
use std::sync::Arc;

/// Whether two cases ask for the same prediction.
fn same_prediction(a: &Case, b: &Case) -> bool {
    a.target == b.target
        && a.batch == b.batch
        && a.scenario == b.scenario
        && match (&a.model, &b.model) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y) || x == y,
            (x, y) => x.is_none() && y.is_none(),
        }
        && (Arc::ptr_eq(&a.hardware, &b.hardware) || a.hardware == b.hardware)
        && match (&a.kernels, &b.kernels) {
            (Some(x), Some(y)) => Arc::ptr_eq(x, y),
            (x, y) => x.is_none() && y.is_none(),
        }
}

/// A hash of what [`same_prediction`] compares: the shapes, and the device and model
/// by address (cases mapped from one file share one copy of each: see
/// [`super::cases_with`]; equal copies at two addresses are only predicted twice).
fn prediction_hash(c: &Case) -> u64 {
    let mut h = DefaultHasher::new();
    Arc::as_ptr(&c.hardware).hash(&mut h);
    c.model.as_ref().map(Arc::as_ptr).hash(&mut h);
    c.kernels.as_ref().map(Arc::as_ptr).hash(&mut h);
    let s = &c.scenario;
    (s.batch, s.prompt, s.gen_tokens, s.gpus, s.flash, s.offload).hash(&mut h);
    s.parallel.hash(&mut h);
    s.weights.as_ref().map(discriminant).hash(&mut h);
    s.kv.as_ref().map(discriminant).hash(&mut h);
    match c.batch {
        BatchSpec::Fixed(n) => Some(n),
        BatchSpec::MaxLoad => None,
    }
    .hash(&mut h);
    c.target.name().hash(&mut h);
    h.finish()
}

/// Each case under `engine`, in parallel.
pub(super) fn predict_all(cases: &[&Case], engine: &Engine) -> Vec<Result<f64>> {
    // a handful is cheaper here than handing it to the thread pool and waiting
    // the fitter's inner loop: stopped work ends here (ridgeline_core::work)
    let w = ridgeline_core::work::current();
    let one = |c: &&Case| {
        if let Some(w) = &w {
            w.check()?;
        }
        predict_case(c, engine)
    };
    if cases.len() < SERIAL_BELOW {
        return cases.iter().map(one).collect();
    }
    cases.par_iter().with_min_len(8).map(one).collect()
}

/// Fewer cases than this are predicted on the calling thread (a prediction takes a
/// few microseconds; waking the pool and waiting for it, tens).
const SERIAL_BELOW: usize = 64;

/// Cases grouped by the prediction they ask for.
#[derive(Debug, Clone)]
pub(super) struct Distinct<'c> {
    /// The cases, as given.
    cases: Vec<&'c Case>,
    /// One case per distinct prediction, in order of first appearance.
    reps: Vec<&'c Case>,
    /// For each case, the index of its representative in `reps`.
    of: Vec<usize>,
}

impl<'c> Distinct<'c> {
    /// Groups `cases`.
    pub(super) fn new(cases: &[&'c Case]) -> Self {
        let mut by_hash: HashMap<u64, Vec<usize>> = HashMap::with_capacity(cases.len());
        let mut reps: Vec<&Case> = Vec::new();
        let mut of = Vec::with_capacity(cases.len());
        for &c in cases {
            let slot = by_hash.entry(prediction_hash(c)).or_default();
            let at = match slot.iter().find(|&&r| same_prediction(reps[r], c)) {
                Some(&r) => r,
                None => {
                    reps.push(c);
                    slot.push(reps.len() - 1);
                    reps.len() - 1
                }
            };
            of.push(at);
        }
        Distinct {
            cases: cases.to_vec(),
            reps,
            of,
        }
    }

    /// Each case's prediction under `engine`, in the order given.
    pub(super) fn predict(&self, engine: &Engine) -> Vec<Result<f64>> {
        let reps = predict_all(&self.reps, engine);
        self.of.iter().map(|&r| reps[r].clone()).collect()
    }
}

/// The speed factors one case's prediction depends on, as bits: its device's memory
/// efficiency, the compute, dequantizing-matmul, fp4-matmul and attention efficiencies,
/// the step, layer and expert overheads, the matrix-vector kernels' time per FLOP and
/// fraction of the peak, and the expert kernels' memory efficiency.
type Factors = [u64; 11];

fn factors(engine: &Engine, c: &Case) -> Factors {
    [
        engine.memory_efficiency(&c.hardware).to_bits(),
        engine.compute_efficiency_on(&c.hardware).to_bits(),
        engine.speed.dequant_efficiency.to_bits(),
        engine.speed.fp4_efficiency.to_bits(),
        engine.speed.attention_efficiency.to_bits(),
        engine.overheads.step_overhead_s.to_bits(),
        engine.overheads.layer_overhead_s.to_bits(),
        engine.expert_overhead_on(&c.hardware).to_bits(),
        engine.gemv_s_per_gflop_on(&c.hardware).to_bits(),
        engine.gemv_compute_efficiency_on(&c.hardware).to_bits(),
        engine.expert_memory_efficiency_on(&c.hardware).to_bits(),
    ]
}

/// Whether `a` and `b` agree in everything but the speed factors [`factors`] reads
/// (and `fitted_on`, which predicts nothing): then a case's prediction under one is its
/// prediction under the other given the same factors.
fn same_rest(a: &Engine, b: &Engine) -> bool {
    // no `..`: a field added to Engine or its groups must be placed here
    let Engine {
        id,
        description,
        speed,
        overheads,
        features,
        scheduler,
        footprint,
        devices,
        provenance: _,
        override_builtin,
    } = a;
    let Speed {
        memory_efficiency: _,
        compute_efficiency: _,
        link_efficiency,
        dequant_efficiency: _,
        fp4_efficiency: _,
        attention_efficiency: _,
        expert_memory_efficiency: _,
        gemv_compute_efficiency: _,
        gemm_half_rows,
    } = speed;
    let Overheads {
        step_overhead_s: _,
        sequence_overhead_s,
        layer_overhead_s: _,
        prefill_layer_overhead_s,
        expert_overhead_s: _,
        gemv_s_per_gflop: _,
        collective_latency_s,
    } = overheads;
    let same = |x: &f64, y: &f64| x.to_bits() == y.to_bits();
    // the device overrides' compute and memory efficiencies, expert overheads,
    // matrix-vector times and efficiencies and expert memory efficiencies are read
    // through `factors`;
    // which devices they select is not
    let selects = |d: &[DeviceOverride]| d.iter().map(|o| o.select.clone()).collect::<Vec<_>>();
    *id == b.id
        && *description == b.description
        && same(link_efficiency, &b.speed.link_efficiency)
        && same(collective_latency_s, &b.overheads.collective_latency_s)
        && *footprint == b.footprint
        && *override_builtin == b.override_builtin
        && same(sequence_overhead_s, &b.overheads.sequence_overhead_s)
        && same(gemm_half_rows, &b.speed.gemm_half_rows)
        && same(
            prefill_layer_overhead_s,
            &b.overheads.prefill_layer_overhead_s,
        )
        && *features == b.features
        && *scheduler == b.scheduler
        && selects(devices) == selects(&b.devices)
}

/// Predictions kept per distinct case: a Levenberg-Marquardt step evaluates the point,
/// one Jacobian column per factor (at most a few memory groups, compute, an overhead)
/// and one or more trial steps.
const RECENT: usize = 12;

#[derive(Debug, Default)]
struct Seen {
    /// An engine the predictions were made with (all agree but in their speed
    /// factors, see [`same_rest`]).
    rest: Option<Engine>,
    /// Per distinct case: recent (factors, prediction), oldest replaced first.
    recent: Vec<Vec<(Factors, f64)>>,
    /// Per distinct case: the slot the next prediction replaces once full.
    next: Vec<usize>,
}

/// The predictions of a fixed set of cases under engines that differ in their speed
/// factors, remembered (see the module documentation).
#[derive(Debug)]
pub(super) struct Memo<'c> {
    distinct: Distinct<'c>,
    seen: RefCell<Seen>,
}

impl<'c> Memo<'c> {
    /// An empty memory for `cases`.
    pub(super) fn new(cases: &[&'c Case]) -> Self {
        Memo {
            distinct: Distinct::new(cases),
            seen: RefCell::new(Seen::default()),
        }
    }

    /// Each case's prediction under `engine`, in the order given; the first case
    /// whose prediction fails is the error, with its row named.
    pub(super) fn predict(&self, engine: &Engine) -> Result<Vec<f64>> {
        let reps = &self.distinct.reps;
        let mut seen = self.seen.borrow_mut();
        if !seen.rest.as_ref().is_some_and(|r| same_rest(r, engine)) {
            *seen = Seen {
                rest: Some(engine.clone()),
                recent: vec![Vec::new(); reps.len()],
                next: vec![0; reps.len()],
            };
        }
        let keys: Vec<Factors> = reps.iter().map(|c| factors(engine, c)).collect();
        let mut now = vec![f64::NAN; reps.len()];
        let mut todo: Vec<usize> = Vec::new();
        for (i, key) in keys.iter().enumerate() {
            match seen.recent[i].iter().find(|(k, _)| k == key) {
                Some(&(_, p)) => now[i] = p,
                None => todo.push(i),
            }
        }
        let cases: Vec<&Case> = todo.iter().map(|&i| reps[i]).collect();
        let mut failed = HashMap::new();
        for (&i, got) in todo.iter().zip(predict_all(&cases, engine)) {
            match got {
                Ok(p) => {
                    now[i] = p;
                    seen.remember(i, keys[i], p);
                }
                Err(e) => {
                    failed.insert(i, e);
                }
            }
        }
        let d = &self.distinct;
        if !failed.is_empty() {
            // the first case, in the order given, whose prediction failed
            if let Some((c, e)) = d
                .cases
                .iter()
                .zip(&d.of)
                .find_map(|(c, r)| Some((c, failed.get(r)?)))
            {
                return Err(c.row_error(e.clone()));
            }
        }
        Ok(d.of.iter().map(|&r| now[r]).collect())
    }
}

impl Seen {
    fn remember(&mut self, i: usize, key: Factors, p: f64) {
        let slot = &mut self.recent[i];
        if slot.len() < RECENT {
            slot.push((key, p));
        } else {
            slot[self.next[i]] = (key, p);
            self.next[i] = (self.next[i] + 1) % RECENT;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibrate::{BUILTIN_MEASUREMENTS_CSV, cases, parse_measurements};

    #[test]
    fn remembered_predictions_are_the_plain_ones() {
        let rows = parse_measurements(BUILTIN_MEASUREMENTS_CSV, "m.csv").unwrap();
        let mapped = cases(&rows).unwrap();
        // every row twice: the copies are one distinct prediction each
        let all: Vec<&Case> = mapped
            .cases
            .iter()
            .chain(&mapped.cases)
            .filter(|c| c.model.is_some())
            .collect();
        let memo = Memo::new(&all);
        // (some bundled rows already ask for the same prediction as another)
        let once: Vec<&Case> = all[..all.len() / 2].to_vec();
        assert_eq!(memo.distinct.reps.len(), Distinct::new(&once).reps.len());
        assert!(memo.distinct.reps.len() * 2 <= all.len());
        let base = crate::engine::EngineDb::builtin()
            .unwrap()
            .get("typical")
            .unwrap()
            .clone();
        let mut engines = vec![base.clone()];
        for (hbm, compute, layer) in [(0.7, 0.6, 5e-5), (0.7, 0.61, 5e-5), (0.5, 0.6, 1e-4)] {
            let mut e = base.clone();
            e.speed.memory_efficiency.insert("hbm".into(), hbm);
            e.speed.compute_efficiency = compute;
            e.overheads.layer_overhead_s = layer;
            engines.push(e);
        }
        // an engine that differs elsewhere (collective latency) is not mistaken for one
        // seen before
        let mut other = engines[1].clone();
        other.overheads.collective_latency_s *= 10.0;
        engines.extend([base.clone(), other, engines[1].clone()]);
        for e in &engines {
            let got = memo.predict(e).unwrap();
            for (c, p) in all.iter().zip(got) {
                assert_eq!(
                    p.to_bits(),
                    predict_case(c, e).unwrap().to_bits(),
                    "{}",
                    c.id
                );
            }
        }
    }
}
