import Foundation
import Testing

/// Marks tests that start processes or servers, use PostgreSQL, or keep a core busy for seconds
/// (conformance suites, property-based convergence): at most a few of them run at the same time.
///
/// Swift Testing starts every test of the run at once. On a machine with two cores, the first
/// minute then had dozens of gateway processes, Python plugins, PostgreSQL clusters and a browser
/// competing with the tests that measure time (a 6 s stall limit, a 10 s connect timeout, a
/// statement cut while it runs): setting up one test took 30 s and such tests failed, in CI and
/// here, with no bug behind them. The suite's wall time is set by its longest serialized suite,
/// not by this width (measured: 275 s unlimited, 262 s with this trait).
///
/// Apply it to a suite (it covers every test in it) or to one test. A parameterized test takes
/// one place for all of its cases.
public struct HeavyTestTrait: SuiteTrait, TestTrait, TestScoping {
    /// Traits of a suite apply to each of its tests, which take the places.
    public var isRecursive: Bool { true }

    /// The trait itself for a test function; none for a suite (its tests take the places) or for
    /// each case of a parameterized test (the function took one place for all of them).
    public func scopeProvider(for test: Test, testCase: Test.Case?) -> HeavyTestTrait? {
        test.isSuite || testCase != nil ? nil : self
    }

    /// Runs the test once it has a place, and gives the place back when it ends.
    public func provideScope(for test: Test, testCase: Test.Case?, performing function: @Sendable () async throws -> Void) async throws {
        await HeavyTestPlaces.shared.take()
        do {
            try await function()
        } catch {
            await HeavyTestPlaces.shared.give()
            throw error
        }
        await HeavyTestPlaces.shared.give()
    }
}

extension Trait where Self == HeavyTestTrait {
    /// The test starts processes or servers: it waits for one of a few places before it runs
    /// (``HeavyTestPlaces/width``).
    public static var heavy: HeavyTestTrait { HeavyTestTrait() }
}

/// The places heavy tests take, first come first served.
public actor HeavyTestPlaces {
    /// The one set of places of the test process.
    public static let shared = HeavyTestPlaces(width: HeavyTestPlaces.width)

    /// How many heavy tests run at once: `GATEWAY_TEST_HEAVY_WIDTH` if set, else twice the
    /// processors and at least four (they mostly wait on their processes and servers).
    public static var width: Int {
        if let text = ProcessInfo.processInfo.environment["GATEWAY_TEST_HEAVY_WIDTH"], let value = Int(text), value > 0 {
            return value
        }
        return max(4, 2 * ProcessInfo.processInfo.activeProcessorCount)
    }

    private var free: Int
    private var waiting: [CheckedContinuation<Void, Never>] = []

    init(width: Int) {
        free = width
    }

    /// Waits for a free place and takes it.
    public func take() async {
        if free > 0 {
            free -= 1
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    /// Gives a place back, to the longest waiting test if any.
    public func give() {
        if waiting.isEmpty {
            free += 1
        } else {
            waiting.removeFirst().resume()
        }
    }
}
