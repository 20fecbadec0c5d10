//! The run's timeline as a PNG, in the manner of Jepsen's: one row per client process with
//! each operation a bar from its invocation to its completion (green: a write accepted, blue:
//! a grant, purple: a reader's grant, teal: a semaphore's permit, light green: a reader's read,
//! red: failed, orange: unknown; in the election workload a purple bar above for each
//! leadership, as its holder believed it), the faults shaded behind them and named on top, and
//! every anomaly a black line. plotters' bitmap backend only; text through a system font.

use std::path::Path;

use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;

use crate::checkers::election;
use crate::history::{Kind, Role, F};
use crate::run::spec::Spec;
use crate::run::Outcome;
use crate::workloads::args::Workload;

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Registers the font once (plotters keeps a `'static` reference to its bytes).
fn font() -> Result<(), String> {
    static DONE: std::sync::OnceLock<Result<(), String>> = std::sync::OnceLock::new();
    DONE.get_or_init(|| {
        let bytes = std::fs::read(FONT)
            .map_err(|e| format!("{FONT}: {e} (apt-get install fonts-dejavu-core)"))?;
        let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
        plotters::style::register_font("sans-serif", FontStyle::Normal, bytes)
            .map_err(|_| format!("{FONT}: not a font"))
    })
    .clone()
}

fn color(f: F, role: Option<Role>, kind: Kind) -> RGBColor {
    match (f, kind) {
        (F::Cas, Kind::Ok) => RGBColor(46, 160, 67),
        (F::Read, Kind::Ok) => RGBColor(150, 210, 120),
        (F::Acquire, Kind::Ok) if role == Some(Role::Reader) => RGBColor(150, 90, 200),
        (F::Acquire, Kind::Ok) if role == Some(Role::Permit) => RGBColor(0, 150, 160),
        (_, Kind::Ok) => RGBColor(66, 110, 200),
        (_, Kind::Fail) => RGBColor(210, 60, 60),
        _ => RGBColor(240, 150, 30),
    }
}

type Chart<'a> = ChartContext<'a, BitMapBackend<'a>, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

pub fn draw(path: &Path, spec: &Spec, o: &Outcome, verdict: &str) -> Result<(), String> {
    font()?;
    let err = |e: String| format!("chart {}: {e}", path.display());
    let secs = |ns: u64| ns.saturating_sub(o.t0) as f64 / 1e9;
    let end = o
        .ops
        .iter()
        .filter_map(|op| op.done.as_ref())
        .map(|d| secs(d.mono_ns))
        .fold(1.0, f64::max);
    let rows = spec.clients as f64 + 1.0;
    let root = BitMapBackend::new(path, (1400, 130 + 70 * spec.clients)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| err(e.to_string()))?;
    let caption = match spec.workload {
        Workload::Mutex => format!("{}: {verdict}", spec.name),
        Workload::Election => format!("{}: {verdict} (purple above: a leadership)", spec.name),
        Workload::Shared => format!(
            "{}: {verdict} (blue: writer's grant, purple: reader's, light green: a read)",
            spec.name
        ),
        Workload::Semaphore => format!("{}: {verdict} (teal: a permit)", spec.name),
    };
    let mut chart = ChartBuilder::on(&root)
        .caption(caption, ("sans-serif", 22))
        .margin(10)
        .x_label_area_size(35)
        .y_label_area_size(60)
        .build_cartesian_2d(0f64..end, 0f64..rows)
        .map_err(|e| err(e.to_string()))?;
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(0)
        .x_desc("seconds")
        .draw()
        .map_err(|e| err(e.to_string()))?;
    layers(&mut chart, spec, o, rows).map_err(err)?;
    root.present().map_err(|e| err(e.to_string()))
}

/// Each leadership (the election workload) a purple bar above its process's operations,
/// from the campaign's reply to the resignation, the loss signal or the process's end.
fn leaderships(o: &Outcome) -> Vec<Rectangle<(f64, f64)>> {
    let secs = |ns: u64| ns.saturating_sub(o.t0) as f64 / 1e9;
    let purple = RGBColor(130, 60, 170);
    election::terms(&o.ops)
        .iter()
        .map(|t| {
            let (a, y) = (secs(t.won), t.process as f64 + 0.27);
            let b = secs(t.until).max(a + 0.01);
            Rectangle::new([(a, y - 0.06), (b, y + 0.06)], purple.filled())
        })
        .collect()
}

/// Faults behind, operations over them, anomalies on top, then the labels.
fn layers(chart: &mut Chart, spec: &Spec, o: &Outcome, rows: f64) -> Result<(), String> {
    let secs = |ns: u64| ns.saturating_sub(o.t0) as f64 / 1e9;
    let mut shapes: Vec<Rectangle<(f64, f64)>> = Vec::new();
    for w in &o.windows {
        let shade = if w.breaks.is_some() {
            RGBColor(255, 215, 160)
        } else {
            RGBColor(255, 225, 225)
        };
        let (a, b) = (secs(w.start_ns), secs(w.end_ns));
        shapes.push(Rectangle::new([(a, 0.3), (b, rows)], shade.filled()));
    }
    for op in &o.ops {
        let Some(done) = op.done.as_ref() else {
            continue;
        };
        let data = matches!(op.invoke.f, F::Cas | F::Read);
        let y = op.invoke.process as f64 - if data { 0.0 } else { 0.3 };
        let a = secs(op.invoke.mono_ns);
        let b = secs(done.mono_ns).max(a + 0.01);
        let c = color(op.invoke.f, op.invoke.role, done.kind);
        shapes.push(Rectangle::new([(a, y - 0.12), (b, y + 0.12)], c.filled()));
    }
    shapes.extend(leaderships(o));
    let e = |e: DrawingAreaErrorKind<_>| e.to_string();
    chart.draw_series(shapes).map_err(e)?;
    let lines = o
        .checked
        .anomalies
        .iter()
        .chain(&o.problems)
        .map(|a| PathElement::new(vec![(a.at_s, 0.3), (a.at_s, rows)], BLACK.stroke_width(2)));
    chart.draw_series(lines).map_err(e)?;
    let clients = (1..=spec.clients)
        .map(|c| Text::new(format!("c{c}"), (0.0, c as f64 + 0.35), ("sans-serif", 14)));
    chart.draw_series(clients).map_err(e)?;
    let faults = o.windows.iter().enumerate().map(|(i, w)| {
        let y = rows - 0.15 - 0.25 * (i % 3) as f64;
        Text::new(w.name.clone(), (secs(w.start_ns), y), ("sans-serif", 12))
    });
    chart.draw_series(faults).map_err(e)?;
    Ok(())
}
