//! Where `weir run`'s memory goes, from its own `/metrics` gauges: cached objects and bytes,
//! index entries, compiled code and the instance pool, each summed over its labels ([`sum`],
//! which the bench also reads the reconcile counter with).

/// The gauges of one `weir run`, summed over every kind or plugin.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct Breakdown {
    pub(crate) cached_objects: f64,
    pub(crate) cached_bytes: f64,
    pub(crate) index_entries: f64,
    pub(crate) code_bytes: f64,
    pub(crate) pool_resident_bytes: f64,
}

impl Breakdown {
    /// The breakdown in `text`, what the ops server's `/metrics` answered.
    pub(crate) fn of(text: &str) -> Self {
        let sum = |family: &str| sum(text, family);
        Self {
            cached_objects: sum("weir_cached_objects"),
            cached_bytes: sum("weir_cached_bytes"),
            index_entries: sum("weir_index_entries"),
            code_bytes: sum("weir_plugin_code_bytes"),
            pool_resident_bytes: sum("weir_plugin_pool_resident_bytes"),
        }
    }

    /// One line for the table's foot.
    pub(crate) fn line(&self) -> String {
        let mib = |b: f64| b / (1024.0 * 1024.0);
        format!(
            "{:.0} cached objects in {:.1} MiB ({:.0} B each), {:.0} index entries, \
             compiled code {:.1} MiB, instance pool resident {:.1} MiB",
            self.cached_objects,
            mib(self.cached_bytes),
            self.cached_bytes / self.cached_objects.max(1.0),
            self.index_entries,
            mib(self.code_bytes),
            mib(self.pool_resident_bytes),
        )
    }
}

/// The sum of a metric family's samples over all their labels in `/metrics` text.
pub(crate) fn sum(text: &str, family: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter(|l| {
            l.strip_prefix(family)
                .is_some_and(|rest| rest.starts_with('{') || rest.starts_with(' '))
        })
        .filter_map(|l| l.rsplit(' ').next()?.parse::<f64>().ok())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_is_summed_over_its_labels_and_other_families_are_not_counted() {
        let text = "# HELP weir_cached_objects x\n\
                    weir_cached_objects{group=\"\",kind=\"ConfigMap\"} 3\n\
                    weir_cached_objects{group=\"apps\",kind=\"Deployment\"} 2\n\
                    weir_cached_objects_total 99\n\
                    weir_cached_bytes{group=\"\",kind=\"ConfigMap\"} 3000\n\
                    weir_plugin_code_bytes{plugin=\"blog\"} 1048576\n";
        let b = Breakdown::of(text);
        assert_eq!(b.cached_objects, 5.0);
        assert_eq!(b.cached_bytes, 3000.0);
        assert_eq!(b.code_bytes, 1048576.0);
        assert_eq!(b.index_entries, 0.0);
    }

    #[test]
    fn a_counter_is_summed_over_its_plugins_and_results() {
        let text = "# TYPE weir_reconciles counter\n\
                    weir_reconciles_total{plugin=\"blog\",result=\"ok\"} 40\n\
                    weir_reconciles_total{plugin=\"blog\",result=\"requeue\"} 2\n\
                    weir_reconciles_total{plugin=\"other\",result=\"ok\"} 1\n\
                    weir_reconciles_created 1.7e9\n";
        assert_eq!(sum(text, "weir_reconciles_total"), 43.0);
        assert_eq!(sum(text, "weir_reconciles"), 0.0);
    }
}
