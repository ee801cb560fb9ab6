import Synchronization

/// A value shared between tasks behind a lock, for test code that needs a flag or a counter.
public final class LockedValue<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>

    /// A lock around `value`.
    public init(_ value: Value) {
        storage = Mutex(value)
    }

    /// The current value.
    public func get() -> Value { storage.withLock { $0 } }

    /// Replaces the value.
    public func set(_ value: Value) { storage.withLock { $0 = value } }

    /// Changes the value in place and returns what `body` returns.
    @discardableResult
    public func withLock<T: Sendable>(_ body: (inout Value) throws -> T) rethrows -> T {
        try storage.withLock { try body(&$0) }
    }
}
