//! Classification of IP addresses: which ones egress may connect to.

use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not a public unicast address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum AddressClass {
    /// `0.0.0.0/8`, `::`.
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// RFC 1918.
    Private,
    /// `169.254.0.0/16`, `fe80::/10` (cloud metadata lives here).
    LinkLocal,
    /// `100.64.0.0/10`.
    SharedCgnat,
    /// `224.0.0.0/4`, `ff00::/8`.
    Multicast,
    /// `255.255.255.255`.
    Broadcast,
    /// TEST-NET ranges, `2001:db8::/32`.
    Documentation,
    /// `198.18.0.0/15`, `2001:2::/48`.
    Benchmarking,
    /// `fc00::/7`, deprecated site-local `fec0::/10`.
    UniqueLocal,
    /// `::ffff:0:0/96` and `::/96` (IPv4 hidden in IPv6).
    Ipv4Mapped,
    /// `240.0.0.0/4`, `192.0.0.0/24`, 6to4 relay, discard, Teredo, ORCHID and other special ranges.
    Reserved,
}

impl AddressClass {
    /// Whether a host `private_address_targets` exception may allow it.
    pub fn may_be_allowed(self) -> bool {
        !matches!(
            self,
            AddressClass::Unspecified | AddressClass::Multicast | AddressClass::Broadcast
        )
    }
}

impl fmt::Display for AddressClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let word = match self {
            AddressClass::Unspecified => "unspecified",
            AddressClass::Loopback => "loopback",
            AddressClass::Private => "private",
            AddressClass::LinkLocal => "link-local",
            AddressClass::SharedCgnat => "shared (CGNAT)",
            AddressClass::Multicast => "multicast",
            AddressClass::Broadcast => "broadcast",
            AddressClass::Documentation => "documentation",
            AddressClass::Benchmarking => "benchmarking",
            AddressClass::UniqueLocal => "unique-local",
            AddressClass::Ipv4Mapped => "IPv4-mapped",
            AddressClass::Reserved => "reserved",
        };
        f.write_str(word)
    }
}

/// `None` for a public unicast address, else why it is not one.
pub fn classify(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => classify_v4(v4),
        IpAddr::V6(v6) => classify_v6(v6),
    }
}

fn classify_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, c, _] = ip.octets();
    let class = match (a, b, c) {
        (0, _, _) => AddressClass::Unspecified,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (172, 16..=31, _) | (192, 168, _) => AddressClass::Private,
        (169, 254, _) => AddressClass::LinkLocal,
        (100, 64..=127, _) => AddressClass::SharedCgnat,
        (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Documentation,
        (198, 18..=19, _) => AddressClass::Benchmarking,
        (192, 0, 0) | (192, 88, 99) => AddressClass::Reserved,
        _ if ip.is_broadcast() => AddressClass::Broadcast,
        (224..=239, _, _) => AddressClass::Multicast,
        (240..=255, _, _) => AddressClass::Reserved,
        _ => return None,
    };
    Some(class)
}

fn classify_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    let s = ip.segments();
    let class = if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if s[..5] == [0; 5] && (s[5] == 0xffff || s[5] == 0) {
        // ::ffff:a.b.c.d (mapped) and ::a.b.c.d (compatible).
        AddressClass::Ipv4Mapped
    } else if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0; 4] {
        // NAT64 well-known prefix: judge the embedded IPv4 address.
        let v4 = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
        return classify_v4(v4);
    } else if s[0] == 0x2002 {
        // 6to4: the embedded IPv4 address must be public too.
        let v4 = Ipv4Addr::new((s[1] >> 8) as u8, s[1] as u8, (s[2] >> 8) as u8, s[2] as u8);
        return classify_v4(v4);
    } else if s[0] & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else if s[0] & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if s[0] & 0xfe00 == 0xfc00 || s[0] & 0xffc0 == 0xfec0 {
        AddressClass::UniqueLocal
    } else if s[0] == 0x2001 && s[1] == 0x0db8 || s[0] == 0x3fff && s[1] & 0xf000 == 0 {
        AddressClass::Documentation
    } else if s[0] == 0x2001 && s[1] == 0x0002 && s[2] == 0 {
        AddressClass::Benchmarking
    } else if (s[0] == 0x2001 && (s[1] == 0 || (0x10..=0x2f).contains(&s[1])))
        || (s[0] == 0x0100 && s[1..4] == [0; 3])
        || s[0] & 0xe000 != 0x2000
    {
        // Teredo, ORCHID, discard-only, and anything outside global unicast 2000::/3.
        AddressClass::Reserved
    } else {
        return None;
    };
    Some(class)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn class(text: &str) -> Option<AddressClass> {
        classify(text.parse().unwrap())
    }

    #[test]
    fn non_public_addresses_are_classified() {
        let cases = [
            ("127.0.0.1", AddressClass::Loopback),
            ("10.1.2.3", AddressClass::Private),
            ("172.31.0.1", AddressClass::Private),
            ("192.168.1.1", AddressClass::Private),
            ("169.254.169.254", AddressClass::LinkLocal),
            ("100.64.0.1", AddressClass::SharedCgnat),
            ("224.0.0.1", AddressClass::Multicast),
            ("255.255.255.255", AddressClass::Broadcast),
            ("192.0.2.10", AddressClass::Documentation),
            ("0.0.0.0", AddressClass::Unspecified),
            ("240.0.0.1", AddressClass::Reserved),
            ("::", AddressClass::Unspecified),
            ("::1", AddressClass::Loopback),
            ("::ffff:127.0.0.1", AddressClass::Ipv4Mapped),
            ("::ffff:8.8.8.8", AddressClass::Ipv4Mapped),
            ("::127.0.0.1", AddressClass::Ipv4Mapped),
            ("64:ff9b::a9fe:a9fe", AddressClass::LinkLocal),
            ("2002:7f00:1::", AddressClass::Loopback),
            ("fe80::1", AddressClass::LinkLocal),
            ("fd00::1", AddressClass::UniqueLocal),
            ("ff02::1", AddressClass::Multicast),
            ("2001:db8::1", AddressClass::Documentation),
            ("2001::1", AddressClass::Reserved),
        ];
        for (text, expected) in cases {
            assert_eq!(class(text), Some(expected), "{text}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for text in [
            "8.8.8.8",
            "140.82.112.6",
            "172.32.0.1",
            "2606:4700::1111",
            "64:ff9b::808:808",
        ] {
            assert_eq!(class(text), None, "{text}");
        }
    }
}
