/// One behaviour a conformance suite checks, runnable under any test framework.
public struct ConformanceCase<Harness: Sendable>: Sendable, CustomStringConvertible {
    /// What the case proves.
    public let name: String
    let body: @Sendable (Harness) async throws -> Void

    package init(_ name: String, _ body: @escaping @Sendable (Harness) async throws -> Void) {
        self.name = name
        self.body = body
    }

    /// Runs the case; throws ``ConformanceFailure`` (or the implementation's error) on misbehaviour.
    public func run(with harness: Harness) async throws {
        try await body(harness)
    }

    public var description: String { name }
}

/// One behaviour every `ModelAdapter` must show.
public typealias AdapterConformanceCase = ConformanceCase<any AdapterConformanceHarness>
