//! Hostile input: the fixtures' flows and layouts with numbers made extreme, characters cut,
//! lines repeated or dropped, fields removed — loading, setting up and running every level must
//! end in a typed error or an outcome, never a panic, an overflow or an unbounded allocation.

use std::path::{Path, PathBuf};

use pimdiff_cim_mlc::machine::{InputQueue, MachineOptions};
use pimdiff_cim_mlc::{Chip, Flows, Layout, Level, NodeWeights, Tensor};
use serde_json::Value;

/// xorshift64*: the same mutations on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const EXTREMES: [i64; 9] = [-1, 0, 1, 3, 1 << 20, 1 << 31, 1 << 62, -(1 << 62), i64::MAX];

fn weights(layout: &Layout) -> Vec<(String, NodeWeights)> {
    let t = |shape: &[usize]| {
        let n = shape.iter().product::<usize>();
        Tensor::new(shape.to_vec(), (0..n as i64).map(|i| i % 5 - 2).collect()).unwrap()
    };
    layout
        .nodes
        .iter()
        .filter(|n| n.is_weighted())
        .map(|n| {
            let ifm = n.ints("ifmsize").unwrap();
            let ofm = n.ints("ofmsize").unwrap();
            let w = if n.op_type == "Conv" {
                let k = n.ints("kernel_shape").unwrap()[0] as usize;
                let g = n.int("group").unwrap_or(1) as usize;
                NodeWeights::conv(t(&[ofm[1] as usize, ifm[1] as usize / g, k, k]), None)
            } else {
                let (i, o) = (*ifm.last().unwrap() as usize, *ofm.last().unwrap() as usize);
                NodeWeights::matmul(t(&[i, o]))
            };
            (n.name.clone(), w)
        })
        .collect()
}

/// A flow's text with one line changed.
fn mutate_text(text: &str, rng: &mut Rng) -> String {
    let mut lines: Vec<String> = text.lines().map(String::from).collect();
    if lines.is_empty() {
        return text.to_string();
    }
    let i = rng.below(lines.len());
    match rng.below(5) {
        0 => {
            let dup = lines[i].clone();
            lines.insert(i, dup);
        }
        1 => {
            lines.remove(i);
        }
        2 => {
            let mut cut = rng.below(lines[i].len() + 1);
            while !lines[i].is_char_boundary(cut) {
                cut -= 1;
            }
            lines[i].truncate(cut);
        }
        _ => {
            // One number of the line becomes an extreme one.
            let line = &lines[i];
            let starts: Vec<usize> = line
                .char_indices()
                .filter(|(k, c)| {
                    c.is_ascii_digit() && (*k == 0 || !line.as_bytes()[k - 1].is_ascii_digit())
                })
                .map(|(k, _)| k)
                .collect();
            if let Some(&at) = starts.get(rng.below(starts.len())) {
                let end = line[at..]
                    .find(|c: char| !c.is_ascii_digit())
                    .map_or(line.len(), |e| at + e);
                let v = EXTREMES[rng.below(EXTREMES.len())];
                lines[i] = format!("{}{v}{}", &line[..at], &line[end..]);
            }
        }
    }
    lines.join("\n") + "\n"
}

/// One number or key of the layout made extreme or removed.
fn mutate_json(v: &mut Value, rng: &mut Rng) {
    let mut numbers = Vec::new();
    collect(v, String::new(), &mut numbers);
    if numbers.is_empty() {
        return;
    }
    let path = &numbers[rng.below(numbers.len())];
    let target = v.pointer_mut(path).expect("a collected path");
    *target = match rng.below(4) {
        0 => Value::Null,
        _ => Value::from(EXTREMES[rng.below(EXTREMES.len())]),
    };
}

fn collect(v: &Value, path: String, out: &mut Vec<String>) {
    match v {
        Value::Number(_) => out.push(path),
        Value::Array(items) => {
            for (i, x) in items.iter().enumerate() {
                collect(x, format!("{path}/{i}"), out);
            }
        }
        Value::Object(map) => {
            for (k, x) in map {
                collect(x, format!("{path}/{k}"), out);
            }
        }
        _ => {}
    }
}

/// One instruction of a lower level's schedule changed, and the level's flow printed again
/// from the changed schedule (so that it still prints back and the change reaches the machine).
fn mutate_schedule(dir: &Path, layout: &mut Value, rng: &mut Rng) {
    let (key, level) = if rng.below(2) == 0 {
        ("crossbarwise", Level::Crossbar)
    } else {
        ("rcwise", Level::Wordline)
    };
    let Some(cats) = layout
        .get_mut(key)
        .and_then(|s| s.get_mut("categories"))
        .and_then(|c| c.as_object_mut())
    else {
        return;
    };
    let mut slots = Vec::new();
    for (cat, entries) in cats.iter() {
        for (e, entry) in entries.as_array().into_iter().flatten().enumerate() {
            for i in 0..entry["insts"].as_array().map_or(0, |a| a.len()) {
                slots.push((cat.clone(), e, i));
            }
        }
    }
    if slots.is_empty() {
        return;
    }
    let (cat, e, i) = slots[rng.below(slots.len())].clone();
    let inst = &mut cats[&cat][e]["insts"][i];
    let text = inst.as_str().unwrap_or("None").to_string();
    *inst = Value::from(mutate_text(&text, rng).trim_end().to_string());
    let bytes = serde_json::to_vec(layout).unwrap();
    let Ok(parsed) = Layout::parse(&dir.join("layout.json"), &bytes) else {
        return;
    };
    let schedule = if level == Level::Crossbar {
        parsed.crossbar_schedule
    } else {
        parsed.wordline_schedule
    };
    if let Some(lines) = schedule.and_then(|s| pimdiff_cim_mlc::schedule::print(level, &s).ok()) {
        let text: String = lines.into_iter().map(|(l, _)| l + "\n").collect();
        std::fs::write(dir.join(level.file_name()), text).unwrap();
    }
}

fn run_everything(dir: &Path, original: &Layout, queue: InputQueue) {
    let (Ok(flows), Ok(layout)) = (Flows::load(dir), Layout::load(&dir.join("layout.json"))) else {
        return;
    };
    let Some(input) = layout.inputs.first() else {
        return;
    };
    let shape: Vec<usize> = original.inputs[0]
        .shape
        .iter()
        .map(|d| d.unwrap_or(1) as usize)
        .collect();
    let n = shape.iter().product::<usize>();
    let x = Tensor::new(shape, (0..n as i64).map(|i| i % 7 - 3).collect()).unwrap();
    let mut b = Chip::builder(&layout, &flows)
        .input(&input.name, x)
        .options(MachineOptions {
            work_budget: 1 << 22,
            input_queue: queue,
            exact_crossbar_ranges: false,
        });
    for (name, w) in weights(original) {
        b = b.weights(&name, w);
    }
    let Ok(chip) = b.build() else { return };
    for level in Level::ALL {
        let _ = chip.run(level).to_string();
    }
}

#[test]
fn mutated_fixtures_never_panic() {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures");
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15);
    for name in [
        "conv1-tiny",
        "gemm-puma-like",
        "conv-relu-pool-tiny",
        "add-branches-wide",
        "two-convs-example",
        "depthwise-tiny",
    ] {
        let src = root.join(name);
        let original = Layout::load(&src.join("layout.json")).unwrap();
        let layout_json: Value =
            serde_json::from_slice(&std::fs::read(src.join("layout.json")).unwrap()).unwrap();
        let texts: Vec<(String, String)> = Level::ALL
            .iter()
            .filter_map(|l| {
                std::fs::read_to_string(src.join(l.file_name()))
                    .ok()
                    .map(|t| (l.file_name().to_string(), t))
            })
            .collect();
        for round in 0..100 {
            let dir = tempfile::tempdir().unwrap();
            let mut layout = layout_json.clone();
            if round % 3 == 0 {
                mutate_json(&mut layout, &mut rng);
            }
            let k = rng.below(texts.len());
            for (i, (file, text)) in texts.iter().enumerate() {
                let text = if i == k && round % 3 == 1 {
                    mutate_text(text, &mut rng)
                } else {
                    text.clone()
                };
                std::fs::write(dir.path().join(file), text).unwrap();
            }
            if round % 3 == 2 {
                mutate_schedule(dir.path(), &mut layout, &mut rng);
            }
            std::fs::write(
                dir.path().join("layout.json"),
                serde_json::to_vec(&layout).unwrap(),
            )
            .unwrap();
            let queue = if round % 2 == 0 {
                InputQueue::Unbounded
            } else {
                InputQueue::Hardware
            };
            run_everything(dir.path(), &original, queue);
        }
    }
}
