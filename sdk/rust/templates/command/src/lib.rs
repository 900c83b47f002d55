//! A command plugin: `/convert 10 km mi` (alias `/cv`) converts lengths,
//! weights and temperatures, in the terminal, an editor or a chat. Each run
//! gets a fresh instance; state that must last goes in `kv`.

use talaria_plugin_sdk::{CommandSpec, Commands, SessionInfo, config};

/// Units of one quantity: (name, how many base units one is).
const LENGTHS: &[(&str, f64)] = &[
    ("mm", 0.001),
    ("cm", 0.01),
    ("m", 1.0),
    ("km", 1000.0),
    ("in", 0.0254),
    ("ft", 0.3048),
    ("yd", 0.9144),
    ("mi", 1609.344),
];
const WEIGHTS: &[(&str, f64)] = &[
    ("g", 0.001),
    ("kg", 1.0),
    ("t", 1000.0),
    ("oz", 0.028_349_523_125),
    ("lb", 0.453_592_37),
];

/// `value` in `from` expressed in `to`, or why it cannot be.
pub fn convert(value: f64, from: &str, to: &str) -> Result<f64, String> {
    let (from, to) = (from.to_lowercase(), to.to_lowercase());
    if let Some(celsius) = to_celsius(value, &from) {
        return from_celsius(celsius, &to)
            .ok_or_else(|| format!("cannot convert a temperature to {to}"));
    }
    for table in [LENGTHS, WEIGHTS] {
        let factor = |unit: &str| table.iter().find(|(name, _)| *name == unit).map(|u| u.1);
        match (factor(&from), factor(&to)) {
            (Some(a), Some(b)) => return Ok(value * a / b),
            (Some(_), None) => return Err(format!("cannot convert {from} to {to}")),
            _ => {}
        }
    }
    Err(format!("unknown unit {from}: {}", known_units()))
}

fn to_celsius(value: f64, unit: &str) -> Option<f64> {
    match unit {
        "c" => Some(value),
        "f" => Some((value - 32.0) * 5.0 / 9.0),
        "k" => Some(value - 273.15),
        _ => None,
    }
}

fn from_celsius(celsius: f64, unit: &str) -> Option<f64> {
    match unit {
        "c" => Some(celsius),
        "f" => Some(celsius * 9.0 / 5.0 + 32.0),
        "k" => Some(celsius + 273.15),
        _ => None,
    }
}

fn known_units() -> String {
    let names: Vec<&str> = LENGTHS.iter().chain(WEIGHTS).map(|u| u.0).collect();
    format!("known units are {}, c, f and k", names.join(", "))
}

/// The answer to `/convert ARGS`, with `precision` decimals.
pub fn answer(args: &str, precision: usize) -> Result<String, String> {
    let usage = "usage: /convert VALUE FROM TO (for example /convert 10 km mi)";
    let [value, from, to] = args.split_whitespace().collect::<Vec<_>>()[..] else {
        return Err(usage.into());
    };
    let number: f64 = value
        .parse()
        .map_err(|_| format!("{value} is not a number; {usage}"))?;
    let result = convert(number, from, to)?;
    Ok(format!("{value} {from} = {result:.precision$} {to}"))
}

pub struct Units;

impl Commands for Units {
    fn commands() -> Vec<CommandSpec> {
        vec![
            CommandSpec::new("convert", "Convert a length, weight or temperature")
                .with_alias("cv")
                .with_args_hint("<value> <from> <to>")
                .with_category("Tools"),
        ]
    }

    fn run(name: String, args: String, _session: SessionInfo) -> Result<String, String> {
        let precision = config::get("precision")
            .ok()
            .flatten()
            .and_then(|p| p.trim().parse().ok())
            .unwrap_or(2);
        match name.as_str() {
            "convert" => answer(&args, precision),
            other => Err(format!("unit-convert has no command {other}")),
        }
    }
}

talaria_plugin_sdk::export_commands!(Units);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_weights_and_temperatures_convert() {
        assert_eq!(answer("10 km mi", 2).unwrap(), "10 km = 6.21 mi");
        assert_eq!(answer("1 lb g", 1).unwrap(), "1 lb = 453.6 g");
        assert_eq!(answer("100 C F", 0).unwrap(), "100 C = 212 F");
    }

    #[test]
    fn bad_input_is_explained() {
        assert!(
            answer("ten km mi", 2)
                .unwrap_err()
                .contains("is not a number")
        );
        assert!(answer("10 km", 2).unwrap_err().starts_with("usage:"));
        assert_eq!(
            convert(1.0, "km", "kg").unwrap_err(),
            "cannot convert km to kg"
        );
        assert!(
            convert(1.0, "parsec", "m")
                .unwrap_err()
                .contains("known units")
        );
    }
}
