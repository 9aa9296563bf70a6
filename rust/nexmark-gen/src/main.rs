//! Nexmark events as Arrow IPC files, for `benches/nexmark.py`.
//!
//! Runs the `nexmark` crate's generator (RisingWave's port of the standard Java one) for a
//! number of events and writes `person.arrow`, `auction.arrow` and `bid.arrow` into a
//! directory, with Nexmark's columns: integers as int64, `date_time` and `expires` as int64
//! milliseconds since the Unix epoch, strings as UTF-8. Event `n` happens at
//! `base_time + n * 1000 / rate` ms; the default rate of 100 events/s gives 10 ms of event
//! time per event, the spacing DBSP's and Flink's Nexmark benchmarks use, so a 10-second
//! window holds about 1,000 events.
//!
//! ```text
//! nexmark-gen EVENTS OUT_DIR [--rate EVENTS_PER_S] [--base-time MS]
//! ```

use std::fs::File;
use std::path::Path;
use std::process::ExitCode;
use std::sync::Arc;

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, RecordBatch};
use arrow_ipc::writer::FileWriter;
use arrow_schema::{DataType, Field, Schema};
use nexmark::config::NexmarkConfig;
use nexmark::event::Event;
use nexmark::EventGenerator;

/// Rows per record batch in the written files.
const CHUNK: usize = 1 << 16;

/// The command line: how many events, where, and the generator's time settings.
struct Args {
    events: usize,
    out: String,
    rate: usize,
    base_time: u64,
}

fn parse_args() -> Result<Args, String> {
    let usage = "usage: nexmark-gen EVENTS OUT_DIR [--rate EVENTS_PER_S] [--base-time MS]";
    let raw: Vec<String> = std::env::args().skip(1).collect();
    let mut positional = Vec::new();
    let mut rate = 100;
    let mut base_time = 1_700_000_000_000;
    let mut i = 0;
    while i < raw.len() {
        let flag = raw[i].as_str();
        if flag == "--rate" || flag == "--base-time" {
            let value = raw
                .get(i + 1)
                .ok_or_else(|| format!("{flag} needs a value; {usage}"))?;
            let bad = |_| format!("{flag}: not a non-negative integer: {value:?}");
            if flag == "--rate" {
                rate = value.parse().map_err(bad)?;
            } else {
                base_time = value.parse().map_err(bad)?;
            }
            i += 2;
        } else {
            positional.push(raw[i].clone());
            i += 1;
        }
    }
    let [events, out] = positional.as_slice() else {
        return Err(usage.to_string());
    };
    let events = events
        .replace('_', "")
        .parse()
        .map_err(|_| format!("EVENTS: not a non-negative integer: {events:?}"))?;
    if rate == 0 {
        return Err("--rate must be positive".to_string());
    }
    Ok(Args {
        events,
        out: out.clone(),
        rate,
        base_time,
    })
}

/// One output file: its columns' builders and the writer they flush into.
struct Table {
    ints: Vec<Int64Builder>,
    strs: Vec<StringBuilder>,
    schema: Arc<Schema>,
    writer: FileWriter<File>,
    rows: usize,
}

impl Table {
    /// `columns`: name and whether the column is a string (else int64), in file order.
    fn create(dir: &Path, name: &str, columns: &[(&str, bool)]) -> Result<Self, String> {
        let fields: Vec<Field> = columns
            .iter()
            .map(|(c, is_str)| {
                let dtype = if *is_str {
                    DataType::Utf8
                } else {
                    DataType::Int64
                };
                Field::new(*c, dtype, false)
            })
            .collect();
        let schema = Arc::new(Schema::new(fields));
        let path = dir.join(format!("{name}.arrow"));
        let file = File::create(&path).map_err(|e| format!("{}: {e}", path.display()))?;
        let writer =
            FileWriter::try_new(file, &schema).map_err(|e| format!("{}: {e}", path.display()))?;
        let n_str = columns.iter().filter(|(_, s)| *s).count();
        Ok(Table {
            ints: (0..columns.len() - n_str)
                .map(|_| Int64Builder::new())
                .collect(),
            strs: (0..n_str).map(|_| StringBuilder::new()).collect(),
            schema,
            writer,
            rows: 0,
        })
    }

    fn end_row(&mut self) -> Result<(), String> {
        self.rows += 1;
        if self.rows == CHUNK {
            self.flush()?;
        }
        Ok(())
    }

    /// Writes the buffered rows as one record batch, columns in schema order.
    fn flush(&mut self) -> Result<(), String> {
        if self.rows == 0 {
            return Ok(());
        }
        let (mut ints, mut strs) = (self.ints.iter_mut(), self.strs.iter_mut());
        let arrays: Vec<ArrayRef> = self
            .schema
            .fields()
            .iter()
            .map(|f| -> ArrayRef {
                if f.data_type() == &DataType::Utf8 {
                    Arc::new(strs.next().expect("a string builder").finish())
                } else {
                    Arc::new(ints.next().expect("an int builder").finish())
                }
            })
            .collect();
        let batch = RecordBatch::try_new(self.schema.clone(), arrays).map_err(|e| e.to_string())?;
        self.writer.write(&batch).map_err(|e| e.to_string())?;
        self.rows = 0;
        Ok(())
    }

    fn finish(mut self) -> Result<(), String> {
        self.flush()?;
        self.writer.finish().map_err(|e| e.to_string())
    }
}

fn int(v: usize) -> i64 {
    i64::try_from(v).expect("a Nexmark value fits in int64")
}

fn time(v: u64) -> i64 {
    i64::try_from(v).expect("a Nexmark time fits in int64")
}

fn generate(args: &Args) -> Result<[usize; 3], String> {
    let dir = Path::new(&args.out);
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let mut person = Table::create(
        dir,
        "person",
        &[
            ("id", false),
            ("name", true),
            ("email_address", true),
            ("credit_card", true),
            ("city", true),
            ("state", true),
            ("date_time", false),
            ("extra", true),
        ],
    )?;
    let mut auction = Table::create(
        dir,
        "auction",
        &[
            ("id", false),
            ("item_name", true),
            ("description", true),
            ("initial_bid", false),
            ("reserve", false),
            ("date_time", false),
            ("expires", false),
            ("seller", false),
            ("category", false),
            ("extra", true),
        ],
    )?;
    let mut bid = Table::create(
        dir,
        "bid",
        &[
            ("auction", false),
            ("bidder", false),
            ("price", false),
            ("channel", true),
            ("url", true),
            ("date_time", false),
            ("extra", true),
        ],
    )?;
    let config = NexmarkConfig {
        first_rate: args.rate,
        next_rate: args.rate,
        base_time: args.base_time,
        ..NexmarkConfig::default()
    };
    let mut counts = [0; 3];
    for event in EventGenerator::new(config).take(args.events) {
        match event {
            Event::Person(p) => {
                let (i, s) = (&mut person.ints, &mut person.strs);
                i[0].append_value(int(p.id));
                s[0].append_value(&p.name);
                s[1].append_value(&p.email_address);
                s[2].append_value(&p.credit_card);
                s[3].append_value(&p.city);
                s[4].append_value(&p.state);
                i[1].append_value(time(p.date_time));
                s[5].append_value(&p.extra);
                person.end_row()?;
                counts[0] += 1;
            }
            Event::Auction(a) => {
                let (i, s) = (&mut auction.ints, &mut auction.strs);
                i[0].append_value(int(a.id));
                s[0].append_value(&a.item_name);
                s[1].append_value(&a.description);
                i[1].append_value(int(a.initial_bid));
                i[2].append_value(int(a.reserve));
                i[3].append_value(time(a.date_time));
                i[4].append_value(time(a.expires));
                i[5].append_value(int(a.seller));
                i[6].append_value(int(a.category));
                s[2].append_value(&a.extra);
                auction.end_row()?;
                counts[1] += 1;
            }
            Event::Bid(b) => {
                let (i, s) = (&mut bid.ints, &mut bid.strs);
                i[0].append_value(int(b.auction));
                i[1].append_value(int(b.bidder));
                i[2].append_value(int(b.price));
                s[0].append_value(&b.channel);
                s[1].append_value(&b.url);
                i[3].append_value(time(b.date_time));
                s[2].append_value(&b.extra);
                bid.end_row()?;
                counts[2] += 1;
            }
        }
    }
    person.finish()?;
    auction.finish()?;
    bid.finish()?;
    Ok(counts)
}

fn main() -> ExitCode {
    let args = match parse_args() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("nexmark-gen: {e}");
            return ExitCode::from(2);
        }
    };
    match generate(&args) {
        Ok([p, a, b]) => {
            println!(
                "nexmark-gen: {} events -> {}: {p} persons, {a} auctions, {b} bids",
                args.events, args.out
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("nexmark-gen: {e}");
            ExitCode::FAILURE
        }
    }
}
