//! The cluster IPs and node ports the stored Services hold, so that allocating one does not scan every Service.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::net::Ipv4Addr;

use serde_json::Value;

/// The service CIDR cluster IPs come from (kube-apiserver's default `--service-cluster-ip-range`).
pub const SERVICE_CIDR: (Ipv4Addr, u32) = (Ipv4Addr::new(10, 96, 0, 0), 12);
/// kube-apiserver's default `--service-node-port-range`.
pub const NODE_PORTS: std::ops::RangeInclusive<u32> = 30000..=32767;
/// The first cluster IP handed out: after the network address and `.1` (which a cluster gives
/// to the `kubernetes` Service).
const FIRST_IP_OFFSET: u32 = 2;

/// Values in use with how many holders each has, and the lowest free one at or above `start`.
#[derive(Debug)]
struct Pool {
    used: HashMap<u32, u32>,
    start: u32,
    /// Every value in `start..lowest_free` is in use (amortized O(1) for sequential fills).
    lowest_free: u32,
}

impl Pool {
    fn new(start: u32) -> Self {
        Pool {
            used: HashMap::new(),
            start,
            lowest_free: start,
        }
    }

    fn hold(&mut self, v: u32) {
        *self.used.entry(v).or_default() += 1;
        while self.used.contains_key(&self.lowest_free) {
            self.lowest_free += 1;
        }
    }

    fn release(&mut self, v: u32) {
        if let Entry::Occupied(mut e) = self.used.entry(v) {
            *e.get_mut() -= 1;
            if *e.get() == 0 {
                e.remove();
                if v >= self.start && v < self.lowest_free {
                    self.lowest_free = v;
                }
            }
        }
    }
}

/// What the stored Services hold: cluster IPs (as offsets into [`SERVICE_CIDR`]) and node ports.
#[derive(Debug)]
pub struct Allocations {
    ips: Pool,
    ports: Pool,
}

impl Default for Allocations {
    fn default() -> Self {
        Allocations {
            ips: Pool::new(FIRST_IP_OFFSET),
            ports: Pool::new(*NODE_PORTS.start()),
        }
    }
}

/// The offset of `ip` in [`SERVICE_CIDR`], if it lies there.
fn ip_offset(ip: &str) -> Option<u32> {
    let ip: Ipv4Addr = ip.parse().ok()?;
    let base = u32::from(SERVICE_CIDR.0);
    let offset = u32::from(ip).checked_sub(base)?;
    (offset < 1 << (32 - SERVICE_CIDR.1)).then_some(offset)
}

/// The node ports a Service's spec names.
fn node_ports(svc: &Value) -> impl Iterator<Item = u32> + '_ {
    svc.pointer("/spec/ports")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|p| p.get("nodePort").and_then(Value::as_u64))
        .filter_map(|n| u32::try_from(n).ok())
}

impl Allocations {
    /// Count a stored Service's cluster IP and node ports as held (`add`) or no longer (`!add`).
    pub fn track(&mut self, svc: &Value, add: bool) {
        let apply = |pool: &mut Pool, v: u32| {
            if add {
                pool.hold(v);
            } else {
                pool.release(v);
            }
        };
        if let Some(ip) = svc
            .pointer("/spec/clusterIP")
            .and_then(Value::as_str)
            .and_then(ip_offset)
        {
            apply(&mut self.ips, ip);
        }
        for port in node_ports(svc) {
            apply(&mut self.ports, port);
        }
    }

    /// The lowest cluster IP no stored Service holds (the first one if the range is full).
    pub fn free_cluster_ip(&self) -> String {
        let size = 1u32 << (32 - SERVICE_CIDR.1);
        let offset = if self.ips.lowest_free < size - 1 {
            self.ips.lowest_free
        } else {
            FIRST_IP_OFFSET
        };
        Ipv4Addr::from(u32::from(SERVICE_CIDR.0) + offset).to_string()
    }

    /// Whether a stored Service holds node port `port`.
    pub fn node_port_held(&self, port: u32) -> bool {
        self.ports.used.contains_key(&port)
    }

    /// The lowest node port no stored Service holds, at or after `from`.
    pub fn free_node_port(&self, from: u32) -> Option<u32> {
        (from.max(self.ports.lowest_free)..=*NODE_PORTS.end()).find(|p| !self.node_port_held(*p))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn svc(ip: &str, ports: &[u32]) -> Value {
        let ports: Vec<Value> = ports.iter().map(|p| json!({"nodePort": p})).collect();
        json!({"spec": {"clusterIP": ip, "ports": ports}})
    }

    #[test]
    fn the_lowest_free_address_is_handed_out_again_after_a_release() {
        let mut a = Allocations::default();
        assert_eq!(a.free_cluster_ip(), "10.96.0.2");
        for i in 2..300 {
            let ip = Ipv4Addr::from(u32::from(SERVICE_CIDR.0) + i).to_string();
            a.track(&svc(&ip, &[]), true);
        }
        assert_eq!(a.free_cluster_ip(), "10.96.1.44");
        a.track(&svc("10.96.0.7", &[]), false);
        assert_eq!(a.free_cluster_ip(), "10.96.0.7");
        a.track(&svc("10.96.0.7", &[]), true);
        assert_eq!(a.free_cluster_ip(), "10.96.1.44");
    }

    #[test]
    fn an_address_two_services_hold_stays_held_until_both_release_it() {
        let mut a = Allocations::default();
        a.track(&svc("10.96.0.2", &[30000]), true);
        a.track(&svc("10.96.0.2", &[30000]), true);
        a.track(&svc("10.96.0.2", &[30000]), false);
        assert_eq!(a.free_cluster_ip(), "10.96.0.3");
        assert!(a.node_port_held(30000));
        assert_eq!(a.free_node_port(30000), Some(30001));
        a.track(&svc("10.96.0.2", &[30000]), false);
        assert_eq!(a.free_cluster_ip(), "10.96.0.2");
        assert_eq!(a.free_node_port(30000), Some(30000));
    }

    #[test]
    fn addresses_outside_the_service_range_are_not_counted() {
        let mut a = Allocations::default();
        a.track(&svc("192.168.0.2", &[]), true);
        a.track(&svc("None", &[]), true);
        assert_eq!(a.free_cluster_ip(), "10.96.0.2");
    }
}
