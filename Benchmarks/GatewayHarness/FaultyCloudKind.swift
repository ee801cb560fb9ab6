import EmbeddedCloud
import Foundation
import GatewayCore
import GatewayConfig
import GatewayTesting

/// `kind: faulty-embedded`: the embedded cloud behind ``FaultInjectingCloud`` with the chaos plan,
/// for reliability runs only (the shipped `gateway` does not have it).
///
/// Keys: `path` (required), `fault_probability` (default 0.05), `seed` (default 1).
struct FaultyCloudKind: CloudKind {
    let name = "faulty-embedded"

    enum Keys: String, CodingKey { case kind, path, faultProbability = "fault_probability", seed }

    func decodePlan(from decoder: any Decoder, context: ConfigContext) throws -> any CloudPlan {
        let container = try decoder.container(keyedBy: Keys.self)
        _ = try container.decodeIfPresent(String.self, forKey: .kind)
        let probability = try container.decodeIfPresent(Located<Double>.self, forKey: .faultProbability)
        if let probability, !(0...1).contains(probability.value) {
            throw probability.problem(.invalidValue, "must be between 0 and 1")
        }
        return Plan(
            path: context.resolve(try container.decode(String.self, forKey: .path)),
            probability: probability?.value ?? 0.05, seed: UInt64(try container.decodeIfPresent(Int.self, forKey: .seed) ?? 1))
    }

    struct Plan: CloudPlan {
        let path: String
        let probability: Double
        let seed: UInt64
        var limits: CloudLimits { CloudLimits() }

        func check() async throws {}

        func open() async throws -> any CloudDatabase {
            FaultInjectingCloud(
                wrapping: try EmbeddedCloud(path: path), plan: .chaos(probability: probability),
                seed: seed ^ UInt64(UInt32(truncatingIfNeeded: getpid())))
        }
    }
}
