import GatewayCore

/// A broken expectation in a conformance suite. Suites throw it, so they run under any test
/// framework: a test that calls a suite case fails with this error's description.
public struct ConformanceFailure: Error, CustomStringConvertible {
    /// What was expected and what happened.
    public var message: String
    /// Where the expectation is written.
    public var location: String

    /// A failure with what the implementation did, at the place in the suite that found it.
    public init(_ message: String, fileID: String = #fileID, line: Int = #line) {
        self.message = message
        self.location = "\(fileID):\(line)"
    }

    public var description: String { "\(message) (\(location))" }
}

/// Fails with `message` unless `condition` holds.
public func expect(
    _ condition: Bool, _ message: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line
) throws {
    if !condition { throw ConformanceFailure(message(), fileID: fileID, line: line) }
}

/// Fails unless `actual == expected`, naming both.
public func expectEqual<T: Equatable>(
    _ actual: T, _ expected: T, _ what: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line
) throws {
    if actual != expected {
        throw ConformanceFailure("\(what()): expected \(expected), got \(actual)", fileID: fileID, line: line)
    }
}

/// Unwraps `value` or fails with `message`.
public func unwrap<T>(
    _ value: T?, _ message: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line
) throws -> T {
    guard let value else { throw ConformanceFailure(message(), fileID: fileID, line: line) }
    return value
}

/// Runs `body` and fails unless it throws a `CloudError` with `code`; returns that error.
@discardableResult
public func expectCloudError<T>(
    _ code: CloudError.Code, _ what: @autoclosure () -> String, fileID: String = #fileID, line: Int = #line,
    _ body: () async throws -> T
) async throws -> CloudError {
    do {
        _ = try await body()
    } catch let error as CloudError {
        if error.code == code { return error }
        throw ConformanceFailure("\(what()): expected \(code), got \(error)", fileID: fileID, line: line)
    } catch {
        throw ConformanceFailure("\(what()): expected \(code), got \(error)", fileID: fileID, line: line)
    }
    throw ConformanceFailure("\(what()): expected \(code), but it succeeded", fileID: fileID, line: line)
}

/// Runs `body`, failing with `what` if it takes longer than `timeout`.
public func withTimeout<T: Sendable>(
    _ timeout: Duration, _ what: String, fileID: String = #fileID, line: Int = #line,
    _ body: @escaping @Sendable () async throws -> T
) async throws -> T {
    try await withThrowingTaskGroup(of: T?.self) { group in
        group.addTask { try await body() }
        group.addTask {
            try await Task.sleep(for: timeout)
            return nil
        }
        defer { group.cancelAll() }
        guard let first = try await group.next(), let value = first else {
            throw ConformanceFailure("\(what): timed out after \(timeout)", fileID: fileID, line: line)
        }
        return value
    }
}

/// Fails unless `signals` yields while `change` keeps changing the store. `change` is called with
/// a round number, about every 50 ms, so a listener that starts late still sees a change.
public func expectChangeSignal(
    from signals: ChangeSignals, timeout: Duration = .seconds(60), fileID: String = #fileID, line: Int = #line,
    whileChanging change: @escaping @Sendable (Int) async throws -> Void
) async throws {
    try await withTimeout(timeout, "waiting for a change signal", fileID: fileID, line: line) {
        try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                var iterator = signals.makeAsyncIterator()
                return await iterator.next() != nil
            }
            group.addTask {
                for round in 0..<200 {
                    try await change(round)
                    try await Task.sleep(for: .milliseconds(50))
                }
                return false
            }
            let first = try await group.next()
            group.cancelAll()
            try expectEqual(first, true, "a signal arrived while the store changed", fileID: fileID, line: line)
        }
    }
}

/// The records of `zone` as the cloud holds them (name → fields), without the gateway's reserved
/// fields, read through the change feed.
public func zoneContents(
    of cloud: any CloudDatabase, zone: ZoneID,
    removing reserved: [String] = ["QSCloudKitModelCompatibilityVersionKey", "QSCloudKitDeviceUUIDKey", "GatewaySupersededValues"]
) async throws -> [String: [String: FieldValue]] {
    var token: ChangeToken?
    var records: [String: [String: FieldValue]] = [:]
    while true {
        let page = try await cloud.fetchChanges(in: zone, since: token, limit: 1000)
        for record in page.modified {
            var fields = record.fields
            for name in reserved { fields[name] = nil }
            records[record.id.recordName] = fields
        }
        for id in page.deleted { records[id.recordName] = nil }
        token = page.token
        if !page.moreComing { return records }
    }
}
