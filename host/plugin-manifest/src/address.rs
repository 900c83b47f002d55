//! Which addresses are not on the public internet, and the numeric host
//! spellings that name them. Outgoing requests of plugins (and of the
//! host's own web tools) refuse such addresses unless the user allows
//! private URLs (`security.allow_private_urls`) or a grant names the host
//! explicitly: a fetch the model asks for must not reach the loopback
//! interface, the LAN or a cloud metadata service (SSRF).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why `ip` is not a public address (`"loopback"`, `"private"`, …), or `None`
/// for a public one. IPv4-mapped and IPv4-compatible IPv6 addresses are
/// judged as the IPv4 address they carry.
pub fn non_public_reason(ip: IpAddr) -> Option<&'static str> {
    match ip {
        IpAddr::V4(v4) => v4_reason(v4),
        IpAddr::V6(v6) => v6_reason(v6),
    }
}

fn v4_reason(ip: Ipv4Addr) -> Option<&'static str> {
    let [a, b, c, _] = ip.octets();
    Some(match (a, b, c) {
        (0, _, _) => "unspecified (0.0.0.0/8)",
        (127, _, _) => "loopback",
        (10, _, _) | (192, 168, _) => "private",
        (172, b, _) if (16..32).contains(&b) => "private",
        (169, 254, _) => "link-local (cloud metadata lives here)",
        (100, b, _) if (64..128).contains(&b) => "CGNAT shared address space (100.64.0.0/10)",
        (192, 0, 0) => "IETF protocol assignments (192.0.0.0/24)",
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => "documentation",
        (198, b, _) if (18..20).contains(&b) => "benchmarking (198.18.0.0/15)",
        (a, _, _) if (224..240).contains(&a) => "multicast",
        (a, _, _) if a >= 240 => "reserved (240.0.0.0/4, broadcast)",
        _ => return None,
    })
}

fn v6_reason(ip: Ipv6Addr) -> Option<&'static str> {
    if let Some(v4) = ip.to_ipv4_mapped() {
        return v4_reason(v4);
    }
    let segments = ip.segments();
    // IPv4-compatible (::a.b.c.d, deprecated) and NAT64 (64:ff9b::/96)
    // addresses reach the IPv4 address in their low 32 bits.
    let low_v4 = || Ipv4Addr::from(((segments[6] as u32) << 16) | segments[7] as u32);
    if segments[..6] == [0; 6] && !ip.is_loopback() && !ip.is_unspecified() {
        return v4_reason(low_v4()).or(Some("IPv4-compatible IPv6"));
    }
    if segments[..6] == [0x64, 0xff9b, 0, 0, 0, 0] {
        return v4_reason(low_v4());
    }
    Some(match segments[0] {
        _ if ip.is_unspecified() => "unspecified (::)",
        _ if ip.is_loopback() => "loopback",
        s if s & 0xfe00 == 0xfc00 => "unique local (private)",
        s if s & 0xffc0 == 0xfe80 => "link-local",
        s if s & 0xffc0 == 0xfec0 => "site-local (private)",
        s if s & 0xff00 == 0xff00 => "multicast",
        0x2001 if segments[1] == 0x0db8 => "documentation",
        _ => return None,
    })
}

/// The IPv4 address a host name spells numerically in any of the forms C's
/// `inet_aton` (and so the system resolver and browsers) accept: one to four
/// parts, each decimal, octal (`0` prefix) or hexadecimal (`0x` prefix), the
/// last part filling the remaining bytes (`2130706433`, `0177.0.0.1`,
/// `0x7f.1`). `None` when it is not such a spelling.
pub fn numeric_ipv4(host: &str) -> Option<Ipv4Addr> {
    let host = host.strip_suffix('.').unwrap_or(host);
    let parts: Vec<&str> = host.split('.').collect();
    if parts.is_empty() || parts.len() > 4 {
        return None;
    }
    let mut values = Vec::with_capacity(parts.len());
    for part in &parts {
        values.push(numeric_part(part)?);
    }
    let (last, leading) = values.split_last()?;
    let mut address: u64 = 0;
    for (i, value) in leading.iter().enumerate() {
        if *value > 0xff {
            return None;
        }
        address |= value << (8 * (3 - i));
    }
    let room = 8 * (4 - leading.len());
    if room < 64 && *last >= 1u64 << room {
        return None;
    }
    Some(Ipv4Addr::from(u32::try_from(address | last).ok()?))
}

fn numeric_part(part: &str) -> Option<u64> {
    let (digits, radix) =
        if let Some(hex) = part.strip_prefix("0x").or_else(|| part.strip_prefix("0X")) {
            (hex, 16)
        } else if part.len() > 1 && part.starts_with('0') {
            (&part[1..], 8)
        } else {
            (part, 10)
        };
    if digits.is_empty() {
        // `0x` alone is 0 for inet_aton; keep it simple and accept it.
        return (radix == 16).then_some(0);
    }
    if digits.len() > 12 {
        return None;
    }
    u64::from_str_radix(digits, radix).ok()
}

/// The address a URL's host names literally: an IP literal (with or without
/// brackets) or a numeric IPv4 spelling. `None` for a name to resolve.
pub fn literal_address(host: &str) -> Option<IpAddr> {
    let bare = host.trim_start_matches('[').trim_end_matches(']');
    if let Ok(ip) = bare.parse::<IpAddr>() {
        return Some(ip);
    }
    numeric_ipv4(bare).map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(ip: &str) -> Option<&'static str> {
        non_public_reason(ip.parse().unwrap_or_else(|e| panic!("{ip}: {e}")))
    }

    #[test]
    fn non_public_classes_are_named() {
        for ip in [
            "127.0.0.1",
            "127.255.0.9",
            "10.1.2.3",
            "172.16.0.1",
            "172.31.255.255",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "100.127.255.255",
            "0.0.0.0",
            "224.0.0.1",
            "255.255.255.255",
            "::1",
            "::",
            "fc00::1",
            "fd12::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "ff02::1",
        ] {
            assert!(reason(ip).is_some(), "{ip} should not be public");
        }
        assert_eq!(reason("169.254.169.254"), reason("::ffff:169.254.169.254"));
        assert_eq!(reason("127.0.0.1"), Some("loopback"));
    }

    #[test]
    fn public_addresses_pass() {
        for ip in [
            "1.1.1.1",
            "8.8.8.8",
            "172.32.0.1",
            "100.128.0.1",
            "93.184.216.34",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert_eq!(reason(ip), None, "{ip} is public");
        }
    }

    #[test]
    fn numeric_spellings_are_read_as_inet_aton_reads_them() {
        let v4 = |s: &str| numeric_ipv4(s).map(|ip| ip.to_string());
        assert_eq!(v4("2130706433").as_deref(), Some("127.0.0.1"));
        assert_eq!(v4("0177.0.0.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(v4("0x7f.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(v4("0x7f000001").as_deref(), Some("127.0.0.1"));
        assert_eq!(v4("127.1").as_deref(), Some("127.0.0.1"));
        assert_eq!(v4("169.254.43518").as_deref(), Some("169.254.169.254"));
        assert_eq!(v4("017700000001").as_deref(), Some("127.0.0.1"));
        assert_eq!(v4("1.2.3.4.").as_deref(), Some("1.2.3.4"));
        for not_numeric in [
            "example.org",
            "1.2.3.4.5",
            "256.1.1.1",
            "4294967296",
            "08.1",
            "",
        ] {
            assert_eq!(v4(not_numeric), None, "{not_numeric:?}");
        }
        assert_eq!(
            literal_address("[::1]"),
            Some(IpAddr::V6(Ipv6Addr::LOCALHOST))
        );
        assert_eq!(literal_address("localhost"), None);
    }
}
