//! Tables as kubectl prints them: upper-case headers, columns left-aligned, three spaces apart.

pub fn render(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = headers.iter().map(|h| h.chars().count()).collect();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            if i < widths.len() {
                widths[i] = widths[i].max(cell.chars().count());
            }
        }
    }
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut l = String::new();
        for (i, cell) in cells.iter().enumerate() {
            l.push_str(cell);
            if i + 1 < cells.len() {
                let pad = widths[i] - cell.chars().count() + 3;
                l.extend(std::iter::repeat_n(' ', pad));
            }
        }
        out.push_str(l.trim_end());
        out.push('\n');
    };
    line(headers.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

/// A cell without control characters (names come from containers), cut to `max` characters.
pub fn cell(s: &str, max: usize) -> String {
    let clean: String = s.chars().map(|c| if c.is_control() { '?' } else { c }).collect();
    if clean.chars().count() <= max {
        clean
    } else {
        let mut t: String = clean.chars().take(max.saturating_sub(1)).collect();
        t.push('…');
        t
    }
}

/// kubectl's age: 42s, 5m, 3h, 2d (and 2m30s, 3h5m under 10 units as kubectl does for minutes
/// and hours).
pub fn age(seconds: i64) -> String {
    let s = seconds.max(0);
    match s {
        0..=119 => format!("{s}s"),
        120..=599 if s % 60 == 0 => format!("{}m", s / 60),
        120..=599 => format!("{}m{}s", s / 60, s % 60),
        600..=10_799 => format!("{}m", s / 60),
        10_800..=28_799 if (s % 3600) / 60 == 0 => format!("{}h", s / 3600),
        10_800..=28_799 => format!("{}h{}m", s / 3600, (s % 3600) / 60),
        28_800..=172_799 => format!("{}h", s / 3600),
        _ => format!("{}d", s / 86_400),
    }
}

/// Bytes as MiB with one decimal.
pub fn mib(bytes: f64) -> String {
    format!("{:.1}Mi", bytes / (1024.0 * 1024.0))
}

/// A rate or a number of seconds, short: 0, 0.02, 1.5, 12, 1.2k.
pub fn num(v: f64) -> String {
    let a = v.abs();
    if a == 0.0 {
        "0".into()
    } else if a < 0.01 {
        format!("{v:.3}")
    } else if a < 10.0 {
        format!("{v:.2}")
    } else if a < 1000.0 {
        format!("{v:.1}")
    } else {
        format!("{:.1}k", v / 1000.0)
    }
}

/// A histogram bound in seconds as a duration: 100us, 2.5ms, 500ms, 1s, 60s.
pub fn duration(seconds: f64) -> String {
    if seconds.is_infinite() {
        "+Inf".into()
    } else if seconds < 0.001 {
        format!("{}us", trim(seconds * 1e6))
    } else if seconds < 1.0 {
        format!("{}ms", trim(seconds * 1e3))
    } else {
        format!("{}s", trim(seconds))
    }
}

fn trim(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_like_kubectl() {
        let t = render(
            &["NAME", "TARGET", "AGE"],
            &[
                vec!["checkout".into(), "Deployment/checkout".into(), "5m".into()],
                vec!["a".into(), "StatefulSet/ledger".into(), "2d".into()],
            ],
        );
        assert_eq!(
            t,
            "NAME       TARGET                AGE\n\
             checkout   Deployment/checkout   5m\n\
             a          StatefulSet/ledger    2d\n"
        );
    }

    #[test]
    fn cells_lose_control_characters_and_are_cut() {
        assert_eq!(cell("a\nb\u{1b}[31m", 20), "a?b?[31m");
        assert_eq!(cell("HandshakeCompletedNotify-Thread", 10), "Handshake…");
        assert_eq!(cell("ünï", 3), "ünï");
    }

    #[test]
    fn ages_numbers_and_durations() {
        assert_eq!(age(-3), "0s");
        assert_eq!(age(59), "59s");
        assert_eq!(age(150), "2m30s");
        assert_eq!(age(3000), "50m");
        assert_eq!(age(4 * 3600 + 120), "4h2m");
        assert_eq!(age(10 * 3600), "10h");
        assert_eq!(age(3 * 86_400 + 5), "3d");
        assert_eq!(num(0.0), "0");
        assert_eq!(num(0.004), "0.004");
        assert_eq!(num(1.234), "1.23");
        assert_eq!(num(42.06), "42.1");
        assert_eq!(num(1500.0), "1.5k");
        assert_eq!(duration(0.00025), "250us");
        assert_eq!(duration(0.0025), "2.5ms");
        assert_eq!(duration(0.5), "500ms");
        assert_eq!(duration(1.0), "1s");
        assert_eq!(duration(2.5), "2.5s");
        assert_eq!(duration(f64::INFINITY), "+Inf");
        assert_eq!(mib(128.0 * 1024.0 * 1024.0), "128.0Mi");
    }
}
