import Foundation
import GatewayCore
import Synchronization

/// An adapter that opens its store again when it must: every adapter of a session is one.
///
/// A store that could not be reached when the gateway started is opened on the next call, so
/// the adapter fails (and backs off) alone while the others sync, and starts syncing as soon as
/// its server is back, without a restart of the gateway. A store that says, as a pass starts,
/// that it is no longer the one its configuration names (a SQLite file replaced or removed
/// behind it: ``storeReplacedCode``) is opened again at once, so the pass reaches the new store
/// and its identity is checked as at any open, instead of the old file taking the writes.
///
/// A store that turns out not to match the configuration fails with that ``ConfigError``.
final class ReopeningAdapter: ForwardingAdapter {
    let configuration: AdapterConfiguration
    /// The open store and how many times a store was opened (the signals follow the newest).
    private let opened: Mutex<(adapter: (any ModelAdapter)?, generation: Int)>

    /// - Parameter adapter: the store already opened, if it was.
    init(_ configuration: AdapterConfiguration, opened adapter: (any ModelAdapter)? = nil) {
        self.configuration = configuration
        opened = Mutex((adapter, adapter == nil ? 0 : 1))
    }

    var name: String { configuration.name }
    var zoneID: ZoneID { configuration.settings.zoneID }

    /// Every call goes to the store, opened first if it was not yet.
    func forwardingTarget() async throws -> any ModelAdapter { try await store() }

    /// The store, opened now if it was not yet.
    func store() async throws -> any ModelAdapter {
        if let adapter = opened.withLock({ $0.adapter }) { return adapter }
        do {
            try await configuration.plan.checkBeforeOpening()
            let adapter = try await configuration.openStore()
            // Two calls may race to open it; the first one kept wins, and the other copy is
            // closed (its connections and processes).
            let (kept, isNew) = opened.withLock { current -> (any ModelAdapter, Bool) in
                if let kept = current.adapter { return (kept, false) }
                current = (adapter, current.generation + 1)
                return (adapter, true)
            }
            if !isNew { await adapter.close() }
            return kept
        } catch let error as ConfigError {
            throw error
        } catch {
            throw GatewayError(
                .storeUnavailable, "adapter \(name): cannot open its store: \(GatewayStores.detail(of: error, adapter: name))", underlying: error)
        }
    }

    /// Which opening of the store ``store()`` returns now (0: none yet).
    var generation: Int { opened.withLock { $0.generation } }

    /// Closes the open store, if one is.
    func close() async {
        await opened.withLock { $0.adapter }?.close()
    }

    /// Whether the store has been opened.
    var isOpen: Bool { opened.withLock { $0.adapter != nil } }

    /// A pass starts here: a store replaced behind the adapter is dropped and opened again.
    func loadZoneState() async throws -> Data? {
        let current = try await store()
        do {
            return try await current.loadZoneState()
        } catch where mostPreciseFailureCode(of: error) == storeReplacedCode {
            let dropped = opened.withLock { state -> Bool in
                guard let kept = state.adapter, kept as AnyObject === current as AnyObject else { return false }
                // A new generation at once: a signal listener still on the dropped store's
                // signals follows the next opening as soon as they wake it.
                state = (nil, state.generation + 1)
                return true
            }
            // The replaced store's connections and processes end now, not at process exit.
            if dropped { await current.close() }
            return try await store().loadZoneState()
        }
    }
    /// The store's signals once it is open; until then, a signal each time it opens, so the
    /// service syncs it at once. A store already open when the watch begins is not signalled:
    /// the sync that starts with the service covers it.
    func changeSignals() -> ChangeSignals {
        ChangeSignals { [self] in OpeningSignalSource(adapter: self) }
    }
}

/// Waits for a ``ReopeningAdapter`` to open (trying every few seconds), signals once, then
/// forwards the store's own signals, those of the newest opening. A store open before the first
/// wait is forwarded without that signal.
private struct OpeningSignalSource: ChangeSignalSource {
    let adapter: ReopeningAdapter
    var inner: ChangeSignals.AsyncIterator?
    /// The opening of the store whose signals `inner` forwards.
    var innerGeneration = 0
    var hasWaited = false

    mutating func waitForChange() async -> Bool {
        // A store dropped or opened again since (replaced behind the adapter) has signals of its
        // own: the old ones watch a closed store (which signals once more, as it closes, to wake
        // a listener waiting on it here).
        if inner != nil, adapter.generation != innerGeneration { inner = nil }
        if !hasWaited {
            hasWaited = true
            // Open before anyone waited: the sync the service starts with reads it, and a signal
            // now would only sync it again once its debounce ends.
            if adapter.isOpen, let store = try? await adapter.store() { await forward(store) }
        }
        if var inner {
            let next: Void? = await inner.next()
            self.inner = inner
            return next != nil
        }
        var delay = Duration.seconds(1)
        while !Task.isCancelled {
            if let store = try? await adapter.store() {
                await forward(store)
                return true
            }
            do {
                try await Task.sleep(for: delay)
            } catch {
                return false
            }
            delay = min(delay * 2, .seconds(30))
        }
        return false
    }

    /// Forwards the signals of `store`, the adapter's newest opening, from now on.
    private mutating func forward(_ store: any ModelAdapter) async {
        var iterator = store.changeSignals().makeAsyncIterator()
        await iterator.start()
        inner = iterator
        innerGeneration = adapter.generation
    }
}
