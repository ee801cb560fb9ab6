import Foundation
import GatewayConfig
import GatewayCore
import Metrics
import Prometheus

/// The metrics of `gateway run`, recorded through swift-metrics into a Prometheus registry that
/// `GET /metrics` exposes. All are labelled by adapter where it applies:
/// `gateway_sync_requests_total{trigger}` (each ask for a sync, by what asked: `start`,
/// `interval`, `store`, `cloud`, `signal`, `http`, `retry`; asks made during a sync are counted
/// and coalesced into one more sync), `gateway_syncs_total{result}`, `gateway_sync_duration_seconds`,
/// `gateway_records_downloaded_total`, `gateway_records_uploaded_total`,
/// `gateway_records_failed_total`, `gateway_adapter_failures_total{code}` (an adapter's failed
/// syncs by ``AdapterSyncReport/failureCode``), `gateway_conflicts_total{policy,resolution}`,
/// `gateway_last_success_timestamp_seconds`, `gateway_batch_size`, and, refreshed at each scrape,
/// `gateway_has_changes`, `gateway_pending_changes`, `gateway_failed_records` and
/// `gateway_adapter_health{health}` (1 for the adapter's ``AdapterHealthState``, 0 for the others,
/// as `/status` and the page say it).
public final class GatewayMetrics: Sendable {
    public let registry: PrometheusCollectorRegistry
    private let factory: PrometheusMetricsFactory

    public init(registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()) {
        self.registry = registry
        self.factory = PrometheusMetricsFactory(registry: registry)
    }

    private func counter(_ label: String, _ dimensions: [(String, String)]) -> Metrics.Counter {
        Metrics.Counter(label: label, dimensions: dimensions, factory: factory)
    }

    private func gauge(_ label: String, _ adapter: String) -> Metrics.Gauge {
        Metrics.Gauge(label: label, dimensions: [("adapter", adapter)], factory: factory)
    }

    func recordRequest(trigger: String) {
        counter("gateway_sync_requests_total", [("trigger", trigger)]).increment()
    }

    func record(_ report: SyncReport, duration: Duration, policies: [String: MergePolicy]) {
        counter("gateway_syncs_total", [("result", report.succeeded ? "succeeded" : "failed")]).increment()
        Metrics.Timer(label: "gateway_sync_duration_seconds", preferredDisplayUnit: .seconds, factory: factory)
            .recordNanoseconds(duration.components.seconds * 1_000_000_000 + duration.components.attoseconds / 1_000_000_000)
        for adapter in report.adapters {
            let name = adapter.adapter
            counter("gateway_records_downloaded_total", [("adapter", name)]).increment(by: adapter.downloaded + adapter.deletedLocally)
            counter("gateway_records_uploaded_total", [("adapter", name)]).increment(by: adapter.uploaded + adapter.deletedRemotely)
            counter("gateway_records_failed_total", [("adapter", name)]).increment(by: adapter.failedRecords)
            if let code = adapter.failureCode {
                counter("gateway_adapter_failures_total", [("adapter", name), ("code", code)]).increment()
            }
            for (resolution, count) in adapter.conflicts {
                counter(
                    "gateway_conflicts_total",
                    [("adapter", name), ("policy", policies[name]?.rawValue ?? ""), ("resolution", resolution.rawValue)]
                ).increment(by: count)
            }
            if adapter.batchSize > 0 { gauge("gateway_batch_size", name).record(adapter.batchSize) }
            if adapter.outcome == .synced {
                gauge("gateway_last_success_timestamp_seconds", name).record(Date().timeIntervalSince1970)
            }
        }
    }

    func record(_ status: ServiceStatus) {
        for adapter in status.adapters {
            gauge("gateway_has_changes", adapter.name).record(adapter.hasChanges ? 1 : 0)
            gauge("gateway_pending_changes", adapter.name).record(adapter.pendingChanges)
            gauge("gateway_failed_records", adapter.name).record(adapter.failedRecords)
            for health in AdapterHealthState.allCases {
                Metrics.Gauge(label: "gateway_adapter_health", dimensions: [("adapter", adapter.name), ("health", health.rawValue)], factory: factory)
                    .record(health == adapter.health ? 1 : 0)
            }
        }
    }

    /// The Prometheus text exposition.
    public func text() -> String { registry.emitToString() }
}
