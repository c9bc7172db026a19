//! Plots, each written as `<stem>.png` and `<stem>.svg`.
//!
//! Text needs a system font (found through fontconfig; on Debian `fonts-dejavu-core`, which
//! `scripts/setup.sh` installs).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::segments::{iterations, pieces, Seg};
use crate::{write_whole, ReportError, Run};

const PALETTE: [RGBColor; 10] = [
    RGBColor(31, 119, 180),
    RGBColor(255, 127, 14),
    RGBColor(44, 160, 44),
    RGBColor(214, 39, 40),
    RGBColor(148, 103, 189),
    RGBColor(140, 86, 75),
    RGBColor(227, 119, 194),
    RGBColor(127, 127, 127),
    RGBColor(188, 189, 34),
    RGBColor(23, 190, 207),
];

const FONT: &str = "sans-serif";

/// A legend entry (the first run of each scheme has one) and its points.
type Series = (Option<String>, Vec<(f64, f64)>);

/// Each run's scheme, numbered in order of first appearance (repetitions share a number).
fn scheme_numbers(runs: &[&Run]) -> Vec<usize> {
    let mut schemes: Vec<&str> = Vec::new();
    runs.iter()
        .map(|r| {
            schemes.iter().position(|s| *s == r.summary.scheme).unwrap_or_else(|| {
                schemes.push(&r.summary.scheme);
                schemes.len() - 1
            })
        })
        .collect()
}

/// One colour per scheme, so repetitions share a colour.
fn scheme_colors(runs: &[&Run]) -> Vec<RGBColor> {
    scheme_numbers(runs).into_iter().map(|k| PALETTE[k % PALETTE.len()]).collect()
}

/// Markers per series, evenly spaced along it.
const MARKERS: usize = 10;

/// Draw series `k`'s points `pts` in `col`: a solid, dashed or dotted line and a marker shape
/// (circle, triangle, cross, square) by `k`, so series that coincide stay apart; returns the
/// legend's sample of the same style.
macro_rules! styled_series {
    ($c:expr, $k:expr, $pts:expr, $col:expr) => {{
        let (k, col, pts) = ($k, $col, $pts);
        let step = (pts.len() / MARKERS).max(1);
        let marked = pts.iter().copied().step_by(step);
        match k % 4 {
            0 => $c.draw_series(marked.map(|p| Circle::new(p, 4, col.filled()))).map(|_| ()),
            1 => $c.draw_series(marked.map(|p| TriangleMarker::new(p, 5, col.filled()))).map(|_| ()),
            2 => $c.draw_series(marked.map(|p| Cross::new(p, 4, col.stroke_width(2)))).map(|_| ()),
            _ => $c
                .draw_series(marked.map(|p| EmptyElement::at(p) + Rectangle::new([(-4, -4), (4, 4)], col.filled())))
                .map(|_| ()),
        }
        .map_err(e2s)?;
        let style = col.stroke_width(2);
        match k % 3 {
            0 => $c.draw_series(LineSeries::new(pts.iter().copied(), style)),
            1 => $c.draw_series(DashedLineSeries::new(pts.iter().copied(), 10, 6, style)),
            _ => $c.draw_series(DashedLineSeries::new(pts.iter().copied(), 3, 4, style)),
        }
        .map_err(e2s)?
    }};
}

fn e2s<E: std::fmt::Display>(e: E) -> ReportError {
    let s = e.to_string();
    ReportError::Plot(if s.to_lowercase().contains("font") {
        format!("cannot render text ({s}); install a font (Debian: fonts-dejavu-core; scripts/setup.sh does)")
    } else {
        format!("plot: {s}")
    })
}

/// The frame every plot shares: caption, margins and label areas.
fn frame<'a, 'b, DB: DrawingBackend>(
    root: &'a DrawingArea<DB, Shift>,
    caption: &str,
    caption_size: u32,
    y_label_area: u32,
) -> ChartBuilder<'a, 'b, DB> {
    let mut b = ChartBuilder::on(root);
    b.caption(caption, (FONT, caption_size)).margin(12).x_label_area_size(40).y_label_area_size(y_label_area);
    b
}

/// Draw the same figure to PNG and SVG, each drawn in memory and written whole or not at all
/// (a full disk names the file and leaves no partial one).
fn both(
    stem: &Path,
    size: (u32, u32),
    draw: impl Fn(&DrawingArea<BitMapBackend, Shift>) -> Result<(), ReportError>,
    draw_svg: impl Fn(&DrawingArea<SVGBackend, Shift>) -> Result<(), ReportError>,
) -> Result<(), ReportError> {
    let (w, h) = size;
    let mut pixels = vec![0u8; w as usize * h as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, size).into_drawing_area();
        root.fill(&WHITE).map_err(e2s)?;
        draw(&root)?;
        root.present().map_err(e2s)?;
    }
    write_whole(&stem.with_extension("png"), |out| {
        use image::ImageEncoder;
        image::codecs::png::PngEncoder::new(out).write_image(&pixels, w, h, image::ColorType::Rgb8).map_err(|e| match e
        {
            image::ImageError::IoError(e) => e,
            e => std::io::Error::other(e),
        })
    })?;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size).into_drawing_area();
        root.fill(&WHITE).map_err(e2s)?;
        draw_svg(&root)?;
        root.present().map_err(e2s)?;
    }
    write_whole(&stem.with_extension("svg"), |out| out.write_all(svg.as_bytes()))
}

/// Normalized error (or loss, when some run has no known θ*) against wall-clock time; None when
/// no run has a positive value to plot (a federated run whose rule accepted no upload).
pub fn error_vs_time(runs: &[&Run], stem: &Path) -> Result<Option<String>, ReportError> {
    let use_error = runs.iter().all(|r| r.iterations.iter().all(|i| i.normalized_error.is_some()));
    let colors = scheme_colors(runs);
    let numbers = scheme_numbers(runs);
    // one legend entry per scheme: "scheme" or "scheme (k runs)"
    let series: Vec<Series> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let pts = r
                .iterations
                .iter()
                .map(|i| (i.cumulative_s, if use_error { i.normalized_error.unwrap_or(f64::NAN) } else { i.loss }))
                .filter(|(_, y)| y.is_finite() && *y > 0.0)
                .collect();
            let first = runs.iter().position(|o| o.summary.scheme == r.summary.scheme) == Some(k);
            let count = runs.iter().filter(|o| o.summary.scheme == r.summary.scheme).count();
            let name = first.then(|| {
                if count > 1 {
                    format!("{} ({count} runs)", r.summary.scheme)
                } else {
                    format!("{} ({})", r.summary.scheme, r.label())
                }
            });
            (name, pts)
        })
        .collect();
    let xmax = series.iter().flat_map(|s| s.1.iter().map(|p| p.0)).fold(0.0, f64::max).max(1e-6);
    let ymin = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(f64::INFINITY, f64::min);
    let ymax = series.iter().flat_map(|s| s.1.iter().map(|p| p.1)).fold(0.0, f64::max);
    if !ymin.is_finite() || ymax <= 0.0 {
        return Ok(None);
    }
    let what = if use_error { "normalized error ‖θ−θ*‖²/‖θ*‖²" } else { "loss" };
    let caption = format!("{what} vs wall-clock time");
    macro_rules! draw {
        ($root:expr) => {{
            let mut c = frame($root, &caption, 20, 70)
                .build_cartesian_2d(0.0..xmax * 1.02, (ymin / 1.5..ymax * 1.5).log_scale())
                .map_err(e2s)?;
            c.configure_mesh().x_desc("seconds since the first iteration started").y_desc(what).draw().map_err(e2s)?;
            for (k, (name, pts)) in series.iter().enumerate() {
                let (col, shape) = (colors[k], numbers[k]);
                let drawn = styled_series!(c, shape, pts, col);
                if let Some(name) = name {
                    drawn.label(name.as_str()).legend(move |(x, y)| {
                        let line = PathElement::new(vec![(x, y), (x + 24, y)], col.stroke_width(2));
                        let mark: DynElement<_, _> = match shape % 4 {
                            0 => Circle::new((x + 12, y), 4, col.filled()).into_dyn(),
                            1 => TriangleMarker::new((x + 12, y), 5, col.filled()).into_dyn(),
                            2 => Cross::new((x + 12, y), 4, col.stroke_width(2)).into_dyn(),
                            _ => Rectangle::new([(x + 8, y - 4), (x + 16, y + 4)], col.filled()).into_dyn(),
                        };
                        EmptyElement::at((0, 0)) + line + mark
                    });
                }
            }
            c.configure_series_labels().background_style(WHITE.mix(0.9)).border_style(BLACK).draw().map_err(e2s)?;
            Ok(())
        }};
    }
    both(stem, (900, 560), |r| draw!(r), |r| draw!(r))?;
    Ok(Some(caption))
}

/// Test accuracy against wall-clock time and against iterations, side by side, when the runs
/// report one (`data.test_path`); None otherwise.
pub fn accuracy(runs: &[&Run], stem: &Path) -> Result<Option<String>, ReportError> {
    if !runs.iter().any(|r| r.iterations.iter().any(|i| i.test_accuracy.is_some())) {
        return Ok(None);
    }
    let colors = scheme_colors(runs);
    let numbers = scheme_numbers(runs);
    let curve = |r: &Run, time: bool| -> Vec<(f64, f64)> {
        r.iterations
            .iter()
            .filter_map(|i| Some((if time { i.cumulative_s } else { i.iteration as f64 + 1.0 }, i.test_accuracy?)))
            .collect()
    };
    let names: Vec<Option<String>> = runs
        .iter()
        .enumerate()
        .map(|(k, r)| {
            let first = runs.iter().position(|o| o.summary.scheme == r.summary.scheme) == Some(k);
            first.then(|| format!("{} ({})", r.summary.scheme, r.label()))
        })
        .collect();
    let xmax = |time: bool| runs.iter().flat_map(|r| curve(r, time)).map(|p| p.0).fold(0.0, f64::max).max(1e-6);
    let ymin = runs.iter().flat_map(|r| curve(r, true)).map(|p| p.1).fold(1.0, f64::min);
    let caption = "test accuracy vs wall-clock time and vs iterations".to_string();
    macro_rules! panel {
        ($area:expr, $time:expr) => {{
            let (time, desc): (bool, &str) =
                if $time { (true, "seconds since the first iteration started") } else { (false, "iterations") };
            let title = if time { "test accuracy vs time" } else { "test accuracy vs iterations" };
            let mut c = frame($area, title, 20, 60)
                .build_cartesian_2d(0.0..xmax(time) * 1.02, (ymin - 0.02).max(0.0)..1.0)
                .map_err(e2s)?;
            c.configure_mesh().x_desc(desc).y_desc("test accuracy").draw().map_err(e2s)?;
            for (k, r) in runs.iter().enumerate() {
                let pts = curve(r, time);
                let (col, shape) = (colors[k], numbers[k]);
                let drawn = styled_series!(c, shape, &pts, col);
                if let (Some(name), false) = (&names[k], time) {
                    drawn
                        .label(name.as_str())
                        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 24, y)], col.stroke_width(2)));
                }
            }
            if !time {
                c.configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.9))
                    .border_style(BLACK)
                    .draw()
                    .map_err(e2s)?;
            }
            Ok::<(), ReportError>(())
        }};
    }
    macro_rules! draw {
        ($root:expr) => {{
            let (left, right) = $root.split_horizontally(600);
            panel!(&left, true)?;
            panel!(&right, false)?;
            Ok(())
        }};
    }
    both(stem, (1200, 480), |r| draw!(r), |r| draw!(r))?;
    Ok(Some(caption))
}

/// Mean iteration time per run as bars, with the p95 marked.
pub fn iteration_times(runs: &[&Run], stem: &Path) -> Result<String, ReportError> {
    let n = runs.len();
    let top = runs.iter().map(|r| r.summary.p95_s.max(r.summary.mean_s)).fold(0.0, f64::max) * 1e3 * 1.15;
    let caption = "mean iteration time (bar) and p95 (tick), ms".to_string();
    let labels: Vec<String> = runs.iter().map(|r| r.label().to_string()).collect();
    let colors = scheme_colors(runs);
    macro_rules! draw {
        ($root:expr) => {{
            let mut c = frame($root, &caption, 20, 60)
                .build_cartesian_2d(-0.5..n as f64 - 0.5, 0.0..top.max(1e-3))
                .map_err(e2s)?;
            c.configure_mesh()
                .disable_x_mesh()
                .x_labels(n)
                .x_label_formatter(&|x| {
                    let i = x.round();
                    if (x - i).abs() < 1e-6 && i >= 0.0 && (i as usize) < labels.len() {
                        labels[i as usize].clone()
                    } else {
                        String::new()
                    }
                })
                .y_desc("ms per iteration")
                .draw()
                .map_err(e2s)?;
            for (k, r) in runs.iter().enumerate() {
                let (x, m, p) = (k as f64, r.summary.mean_s * 1e3, r.summary.p95_s * 1e3);
                let col = colors[k];
                c.draw_series(std::iter::once(Rectangle::new([(x - 0.35, 0.0), (x + 0.35, m)], col.filled())))
                    .map_err(e2s)?;
                c.draw_series(std::iter::once(PathElement::new(
                    vec![(x - 0.2, p), (x + 0.2, p)],
                    BLACK.stroke_width(2),
                )))
                .map_err(e2s)?;
                let label_at = if p - m > top * 0.06 { m + top * 0.045 } else { p + top * 0.045 };
                c.draw_series(std::iter::once(Text::new(format!("{m:.1}"), (x - 0.18, label_at), (FONT, 14))))
                    .map_err(e2s)?;
            }
            Ok(())
        }};
    }
    both(stem, (900, 500), |r| draw!(r), |r| draw!(r))?;
    Ok(caption)
}

/// A segment's colour in the timeline.
fn color(seg: Seg) -> RGBColor {
    match seg {
        Seg::Compute => RGBColor(31, 119, 180),
        Seg::Injected => RGBColor(255, 160, 60),
        Seg::Waiting => RGBColor(205, 205, 205),
        Seg::Screen => RGBColor(214, 39, 40),
        Seg::Decode => RGBColor(148, 103, 189),
        Seg::Reduce => RGBColor(23, 190, 207),
    }
}

/// The timeline's x range is the window's times × this: the legend sits right of the bars.
const LEGEND_ROOM: f64 = 1.45;

/// Per-rank timeline of `k` iterations around the slowest one. Returns the caption, or None if
/// the run has no per-iteration events.
pub fn timeline(run: &Run, k: usize, stem: &Path) -> Result<Option<String>, ReportError> {
    let Some(slow) = run.iterations.iter().max_by(|a, b| a.wall_s.total_cmp(&b.wall_s)) else { return Ok(None) };
    let last = run.iterations.last().map_or(0, |r| r.iteration);
    let t0 = slow.iteration.saturating_sub((k as u64 - 1) / 2).min(last.saturating_sub(k as u64 - 1));
    let t1 = t0 + k as u64 - 1;
    let events = outrun_runlog::read::rank_events(&run.dir)?;
    let ranks = events.keys().max().map_or(0, |m| m + 1);
    let mut ps = Vec::new();
    let mut marks = Vec::new();
    for (&rank, evs) in &events {
        for e in iterations(evs).filter(|e| (t0..=t1).contains(&e.t)) {
            pieces(rank, e, &mut ps, &mut marks);
        }
    }
    if ps.is_empty() {
        return Ok(None);
    }
    let xs = ps.iter().map(|p| p.x0).fold(f64::INFINITY, f64::min);
    let xe = ps.iter().map(|p| p.x1).fold(0.0, f64::max);
    let ms = |x: f64| (x - xs) * 1e3;
    let caption =
        format!("{} ({}): iterations {t0}–{t1} by rank (slowest: {})", run.label(), run.summary.scheme, slow.iteration);
    let height = (160 + 26 * ranks as u32).min(1400);
    macro_rules! draw {
        ($root:expr) => {{
            let mut c = frame($root, &caption, 18, 50)
                // the bars take the left part, the legend the right: it never covers a bar
                .build_cartesian_2d(0.0..ms(xe) * LEGEND_ROOM, -0.5..ranks as f64 - 0.5)
                .map_err(e2s)?;
            let rows = ranks;
            c.configure_mesh()
                .disable_y_mesh()
                .y_labels(rows.min(40))
                .y_label_formatter(&|y| {
                    let r = y.round();
                    if (y - r).abs() < 1e-6 && r >= 0.0 && (r as usize) < rows {
                        format!("{}", rows - 1 - r as usize)
                    } else {
                        String::new()
                    }
                })
                .x_desc("ms since the window's first event")
                .y_desc("rank")
                .draw()
                .map_err(e2s)?;
            let y = |rank: usize| (ranks - 1 - rank) as f64;
            for p in &ps {
                let (a, b) = (ms(p.x0), ms(p.x1));
                c.draw_series(std::iter::once(Rectangle::new(
                    [(a, y(p.rank) - 0.32), (b, y(p.rank) + 0.32)],
                    color(p.seg).filled(),
                )))
                .map_err(e2s)?;
                if p.straggler {
                    c.draw_series(std::iter::once(Rectangle::new(
                        [(a, y(p.rank) - 0.32), (b, y(p.rank) + 0.32)],
                        RED.stroke_width(2),
                    )))
                    .map_err(e2s)?;
                }
            }
            for &(rank, x, what) in &marks {
                let col = if what == "abandoned" { RED } else { BLACK };
                c.draw_series(std::iter::once(Cross::new((ms(x), y(rank)), 5, col.stroke_width(2)))).map_err(e2s)?;
            }
            for seg in [Seg::Compute, Seg::Injected, Seg::Waiting, Seg::Screen, Seg::Decode, Seg::Reduce] {
                if ps.iter().any(|p| p.seg == seg) {
                    let col = color(seg);
                    c.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                        .map_err(e2s)?
                        .label(seg.name())
                        .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], col.filled()));
                }
            }
            if ps.iter().any(|p| p.straggler) {
                c.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                    .map_err(e2s)?
                    .label("straggler")
                    .legend(|(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], RED.stroke_width(2)));
            }
            if marks.iter().any(|m| m.2 == "abandoned") {
                c.draw_series(std::iter::empty::<Cross<(f64, f64), i32>>())
                    .map_err(e2s)?
                    .label("abandoned: result came too late")
                    .legend(|(x, y)| Cross::new((x + 7, y), 5, RED.stroke_width(2)));
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .draw()
                .map_err(e2s)?;
            Ok(())
        }};
    }
    both(stem, (1200, height), |r| draw!(r), |r| draw!(r))?;
    Ok(Some(caption))
}

/// Clustered schemes (`gc-sc`, `gc-dc`): which cluster every worker served, iteration by
/// iteration (colour = cluster), with the workers the straggler process made slow marked, and
/// the ones the master decoded from outlined. Returns the caption, or None if the run has no
/// cluster records.
pub fn partition(run: &Run, stem: &Path) -> Result<Option<String>, ReportError> {
    const MAX_ITERATIONS: usize = 200;
    let events = outrun_runlog::read::rank_events(&run.dir)?;
    let Some(master) = events.get(&0) else { return Ok(None) };
    // (t, worker → cluster, slow workers, responders)
    type Row = (u64, Vec<(usize, usize)>, Vec<usize>, Vec<usize>);
    let rows: Vec<Row> = iterations(master)
        .filter_map(|e| {
            let n = &e.notes;
            let place = n.clusters.as_ref()?.iter().enumerate().flat_map(|(c, m)| m.iter().map(move |&w| (w, c)));
            let responders = n.responders.iter().flatten().flatten().copied().collect();
            Some((e.t, place.collect(), n.slow.clone().unwrap_or_default(), responders))
        })
        .take(MAX_ITERATIONS)
        .collect();
    if rows.is_empty() {
        return Ok(None);
    }
    let workers = rows.iter().flat_map(|r| r.1.iter().map(|p| p.0)).max().unwrap_or(1) as f64;
    let (t0, t1) = (rows[0].0 as f64, rows[rows.len() - 1].0 as f64);
    let clusters = rows.iter().flat_map(|r| r.1.iter().map(|p| p.1)).max().unwrap_or(0) + 1;
    let caption = format!(
        "{} ({}): cluster of every worker per iteration (● slow, □ decoded from)",
        run.label(),
        run.summary.scheme
    );
    macro_rules! draw {
        ($root:expr) => {{
            let mut c = frame($root, &caption, 18, 50)
                .build_cartesian_2d(t0 - 0.5..t1 + 0.5, 0.5..workers + 0.5)
                .map_err(e2s)?;
            c.configure_mesh()
                .disable_mesh()
                .x_label_formatter(&|x| format!("{x:.0}"))
                .y_label_formatter(&|y| format!("{y:.0}"))
                .x_desc("iteration")
                .y_desc("worker")
                .draw()
                .map_err(e2s)?;
            for (t, place, slow, resp) in &rows {
                let x = *t as f64;
                for &(w, cl) in place {
                    let y = w as f64;
                    let cell = [(x - 0.5, y - 0.5), (x + 0.5, y + 0.5)];
                    c.draw_series(std::iter::once(Rectangle::new(
                        cell,
                        PALETTE[cl % PALETTE.len()].mix(0.75).filled(),
                    )))
                    .map_err(e2s)?;
                    if resp.contains(&w) {
                        c.draw_series(std::iter::once(Rectangle::new(cell, BLACK.stroke_width(1)))).map_err(e2s)?;
                    }
                    if slow.contains(&w) {
                        c.draw_series(std::iter::once(Circle::new((x, y), 3, BLACK.filled()))).map_err(e2s)?;
                    }
                }
            }
            for cl in 0..clusters {
                let col = PALETTE[cl % PALETTE.len()];
                c.draw_series(std::iter::empty::<Rectangle<(f64, f64)>>())
                    .map_err(e2s)?
                    .label(format!("cluster {}", cl + 1))
                    .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 14, y + 5)], col.mix(0.75).filled()));
            }
            c.configure_series_labels()
                .position(SeriesLabelPosition::UpperRight)
                .background_style(WHITE.mix(0.9))
                .border_style(BLACK)
                .draw()
                .map_err(e2s)?;
            Ok(())
        }};
    }
    let width = (300 + 8 * rows.len() as u32).clamp(700, 1800);
    let height = (160 + 22 * workers as u32).min(1400);
    both(stem, (width, height), |r| draw!(r), |r| draw!(r))?;
    Ok(Some(caption))
}
