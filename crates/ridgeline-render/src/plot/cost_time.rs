//! Cost against time of a training plan: each method's Pareto front (the feasible
//! configurations no other of that method beats on both cost and time) as a line of
//! markers, one marker shape and colour per method, on log axes; the best and the
//! fastest ringed and labelled; the deadline and the budget as dashed lines when asked.
//!
//! The data is [`TrainPlan::pareto_by_method`] as [`crate::plan::train::plan_training`]
//! computes it; entries without a price have no cost and are left out.

use super::axes::{Axes, draw_axes, fit_axis_titles, log_axis, log_ticks};
use super::draw::{
    Marker, Pen, Root, check_size, draw_dashed, draw_header, draw_line, draw_ring, render_svg,
};
use super::labels::{Label, Leader, Near, Placer, Side};
use super::legend::{Footnote, Panel, Sample, line_sample};
use super::style::{ALERT, GREY, INK, LABEL_PX, MarkerShape, SMALL_PX, TINY_PX, rgb, series_color};
use crate::error::{Error, Result};
use crate::plan::train::{TrainEntry, TrainPlan};
use crate::report::train_plan::{hours, method_name, usd};
use plotters::prelude::*;

/// Canvas size, px.
const WIDTH: u32 = 1000;
const HEIGHT: u32 = 640;
/// Space above the plot for the title block, px.
const TOP: f64 = 58.0;
/// Distance between legend rows, px.
const LINE_H: f64 = 17.0;
const FOOTNOTE: &str = "Each line is one method's Pareto front: no configuration of that method is both cheaper and faster. Time = tokens / (tokens/s x 3600); cost = hours x on-demand price x devices.";

/// The plotted points of one method: (hours, USD, entry), fastest last.
struct Front<'p> {
    method: usize,
    points: Vec<(f64, f64, &'p TrainEntry)>,
}

/// The fronts with a price and the hours and USD ranges (with room for labels).
struct Data<'p> {
    fronts: Vec<Front<'p>>,
    hours: (f64, f64),
    usd: (f64, f64),
}

/// The fronts with a price, and the value ranges (with room for labels).
fn fronts(plan: &TrainPlan) -> Result<Data<'_>> {
    let mut out = Vec::new();
    let (mut x0, mut x1, mut y0, mut y1) = (f64::INFINITY, 0f64, f64::INFINITY, 0f64);
    for (i, f) in plan.pareto_by_method.iter().enumerate() {
        let mut points: Vec<(f64, f64, &TrainEntry)> = f
            .entries
            .iter()
            .filter_map(|e| e.usd.map(|u| (e.hours, u, e)))
            .filter(|(h, u, _)| h.is_finite() && *h > 0.0 && u.is_finite() && *u > 0.0)
            .collect();
        points.sort_by(|a, b| b.0.total_cmp(&a.0));
        for &(h, u, _) in &points {
            (x0, x1, y0, y1) = (x0.min(h), x1.max(h), y0.min(u), y1.max(u));
        }
        if !points.is_empty() {
            out.push(Front { method: i, points });
        }
    }
    if out.is_empty() {
        return Err(Error::invalid(
            "svg",
            "nothing to chart: no configuration with a price qualifies",
        ));
    }
    if let Some(h) = plan.targets.max_hours {
        (x0, x1) = (x0.min(h), x1.max(h));
    }
    if let Some(b) = plan.targets.budget_usd {
        (y0, y1) = (y0.min(b), y1.max(b));
    }
    Ok(Data {
        fronts: out,
        hours: (x0 / 2.0, x1 * 2.0),
        usd: (y0 / 2.0, y1 * 2.5),
    })
}

/// The method's marker.
fn marker(i: usize, r: f64) -> Marker {
    Marker {
        shape: MarkerShape::of_series(i),
        r,
        fill: rgb(series_color(i)).to_rgba(),
        outline: WHITE.to_rgba(),
    }
}

/// A short label of an entry: `2 x a100-80gb-sxm`.
fn short(e: &TrainEntry) -> String {
    format!("{} x {}", e.gpus, e.gpu)
}

/// Draws the chart. Errors: no feasible configuration with a price.
pub fn cost_time(plan: &TrainPlan) -> Result<String> {
    check_size(WIDTH, HEIGHT, 480, 400)?;
    let Data {
        fronts,
        hours: (x0, x1),
        usd: (y0, y1),
    } = fronts(plan)?;
    let (w, h) = (f64::from(WIDTH), f64::from(HEIGHT));
    let panel_w = (w * 0.27).clamp(220.0, 300.0);
    render_svg(WIDTH, HEIGHT, |root| {
        let title = format!("Training {}: cost against time", plan.model);
        let subtitle = format!(
            "{} tokens, {}-token sequences, {} sequences per step; the Pareto front of each method",
            crate::report::train_plan::tokens(plan.tokens as f64),
            plan.seq,
            plan.global_batch
        );
        draw_header(root, &title, &subtitle, w)?;
        let area = root.margin(TOP as i32, 8, 8, panel_w as i32);
        let (aw, ah) = area.dim_in_pixel();
        let (xt, yt, size) = fit_axis_titles(
            "Training time (hours, log scale)",
            f64::from(aw) - 80.0,
            "Cost of the run (USD, log scale)",
            f64::from(ah) - 46.0,
        );
        let frame = draw_axes(
            &area,
            &Axes::new(&yt, size).with_x(&xt, super::axes::si_tick),
            log_axis(x0, x1, log_ticks(x0, x1)),
            log_axis(y0, y1, log_ticks(y0, y1)),
        )?;
        let mut placer = Placer::new(frame.rect.pad(-3.0));
        // targets first, under the data
        if let Some(hmax) = plan.targets.max_hours {
            let (x, _) = frame.px(hmax, y0);
            let pts = [(x, frame.rect.y0), (x, frame.rect.y1)];
            draw_dashed(root, &pts, ALERT.mix(0.8), 2, (6.0, 4.0))?;
            placer.block_line(&pts, 2.0);
        }
        if let Some(b) = plan.targets.budget_usd {
            let (_, y) = frame.px(x0, b);
            let pts = [(frame.rect.x0, y), (frame.rect.x1, y)];
            draw_dashed(root, &pts, ALERT.mix(0.8), 2, (6.0, 4.0))?;
            placer.block_line(&pts, 2.0);
        }
        for f in &fronts {
            let px: Vec<(f64, f64)> = f.points.iter().map(|p| frame.px(p.0, p.1)).collect();
            let c = rgb(series_color(f.method));
            draw_line(root, &px, c.mix(0.9), 2)?;
            placer.block_line(&px, 2.0);
            for &(x, y) in &px {
                marker(f.method, 4.0).draw(root, x, y)?;
                placer.block_marker(x, y, 6.0);
            }
        }
        label_answers(root, plan, &frame_px(&frame), &mut placer)?;
        legend(root, plan, &fronts, (w, h, panel_w))
    })
}

/// The data-to-pixel map of a frame, as a closure the labeller can hold.
fn frame_px<'f, X, Y>(
    frame: &'f super::axes::Frame<'_, X, Y>,
) -> impl Fn(f64, f64) -> (f64, f64) + 'f
where
    X: plotters::coord::ranged1d::Ranged<ValueType = f64>,
    Y: plotters::coord::ranged1d::Ranged<ValueType = f64>,
{
    move |x, y| frame.px(x, y)
}

/// Rings the best and the fastest and labels them; then labels each front's ends where
/// there is room.
fn label_answers(
    root: &Root,
    plan: &TrainPlan,
    px: &dyn Fn(f64, f64) -> (f64, f64),
    placer: &mut Placer,
) -> Result<()> {
    let answers = [("best", &plan.best), ("fastest", &plan.fastest)];
    let mut done: Vec<(f64, f64)> = Vec::new();
    for (word, e) in answers {
        let Some(e) = e else { continue };
        let Some(u) = e.usd else { continue };
        let (x, y) = px(e.hours, u);
        draw_ring(root, x, y, 9.0, INK.to_rgba(), 2)?;
        placer.block_marker(x, y, 11.0);
        let text = if done.contains(&(x, y)) {
            continue;
        } else {
            format!("{word}: {} ({}, {})", short(e), hours(e.hours), usd(u))
        };
        done.push((x, y));
        let label = Label::new(text, Pen::new(SMALL_PX, INK).bold());
        let near = Near::marker(x, y, 10.0, 160.0, &Side::ALL);
        placer.place(root, &label, &near, Leader::Line(GREY.mix(0.8)))?;
    }
    for f in &plan.pareto_by_method {
        for e in [f.entries.first(), f.entries.last()].into_iter().flatten() {
            let Some(u) = e.usd else { continue };
            let (x, y) = px(e.hours, u);
            if done.contains(&(x, y)) {
                continue;
            }
            done.push((x, y));
            let label = Label::new(short(e), Pen::new(TINY_PX, GREY));
            let near = Near::marker(x, y, 6.0, 70.0, &Side::ALL);
            placer.place(root, &label, &near, Leader::Line(GREY.mix(0.6)))?;
        }
    }
    Ok(())
}

/// The side panel: methods with their fronts' ranges, the marks, the footnote.
fn legend(
    root: &Root,
    plan: &TrainPlan,
    fronts: &[Front],
    (w, h, panel_w): (f64, f64, f64),
) -> Result<()> {
    let mut p = Panel::new(root, w - panel_w + 8.0, panel_w - 16.0, TOP + 4.0, LINE_H);
    p.heading("Methods")?;
    for f in fronts {
        let m = plan.pareto_by_method[f.method].method;
        let c = rgb(series_color(f.method)).to_rgba();
        let samples = [
            line_sample(24.0, c, None),
            Sample::Marker((12.0, 7.0), marker(f.method, 3.5)),
        ];
        p.row(&samples, 30.0, method_name(m), LABEL_PX, INK)?;
        let (fast, cheap) = (f.points.last(), f.points.first());
        if let (Some(a), Some(b)) = (cheap, fast) {
            let note = format!(
                "{} .. {} · {} .. {}",
                usd(a.1),
                usd(b.1),
                hours(a.0),
                hours(b.0)
            );
            p.row(&[], 30.0, &note, SMALL_PX, GREY)?;
        }
    }
    p.skip(0.5);
    p.heading("Marks")?;
    draw_ring(root, p.x + 12.0, p.y + 7.0, 7.0, INK.to_rgba(), 2)?;
    p.row(&[], 30.0, "best (cheapest) and fastest", SMALL_PX, INK)?;
    let dash = Sample::Line {
        from: (0.0, 7.0),
        to: (24.0, 7.0),
        color: ALERT.mix(0.8),
        width: 2,
        dash: Some((6.0, 4.0)),
    };
    if plan.targets.max_hours.is_some() || plan.targets.budget_usd.is_some() {
        p.row(&[dash], 30.0, "deadline / budget asked", SMALL_PX, INK)?;
    }
    p.footnote(&Footnote::new(FOOTNOTE, p.inner, h), p.y + LINE_H + 4.0)
}
