import GatewayCore

/// A broken expectation in a conformance suite. Suites throw it, so they run under any test
/// framework: a test that calls a suite case fails with this error's description.
public struct ConformanceFailure: Error, CustomStringConvertible {
    /// What was expected and what happened.
    public var message: String
    /// Where the expectation is written.
    public var location: String

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

/// Runs `body` and fails unless it throws a ``CloudError`` with `code`; returns that error.
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
