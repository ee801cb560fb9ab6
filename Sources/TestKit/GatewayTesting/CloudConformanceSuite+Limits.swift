import Foundation
import GatewayCore

extension CloudConformanceSuite {
    static let limitCases: [CloudConformanceCase] = [
        CloudConformanceCase("more operations than the limit fail the whole request with limitExceeded") { harness in
            let limits = CloudLimits(maxOperationsPerRequest: 5)
            let cloud = try await freshCloud(harness, limits: limits)
            try expectEqual(cloud.limits.maxOperationsPerRequest, 5, "the reported operation limit")
            let six = (0..<6).map { RecordOperation.create(note("r\($0)", title: "x")) }
            try await expectCloudError(.limitExceeded, "six operations against a limit of five") {
                try await cloud.modify(six, in: zone, atomic: false)
            }
            try expect(try await fetchAll(cloud, since: nil).modified.isEmpty, "nothing of the refused request is applied")
            let five = try await cloud.modify(Array(six.prefix(5)), in: zone, atomic: false)
            try expectEqual(five.compactMap(\.error).count, 0, "five operations are accepted")
        },
        CloudConformanceCase("an oversized record fails alone; an oversized request fails whole") { harness in
            let limits = CloudLimits(maxRecordSize: 1_000, maxRequestSize: 3_000)
            let cloud = try await freshCloud(harness, limits: limits)
            let big = note("big", title: "big", extra: ["blob": .bytes(Data(repeating: 7, count: 1_500))])
            let results = try await cloud.modify([.create(big), .create(note("small", title: "s"))], in: zone, atomic: false)
            let error = try failure(results[0])
            try expectEqual(error.code, .limitExceeded, "an oversized record")
            try expect(error.message.contains("1000"), "the message names the limit: \(error.message)")
            _ = try saved(results[1])
            let fourOf900 = (0..<4).map {
                RecordOperation.create(note("m\($0)", title: "m", extra: ["blob": .bytes(Data(repeating: 1, count: 900))]))
            }
            try await expectCloudError(.limitExceeded, "a request of 3,600 bytes against a limit of 3,000") {
                try await cloud.modify(fourOf900, in: zone, atomic: false)
            }
            try expectEqual(try await cloud.lookup([id("m0")])[0], nil, "nothing of the oversized request is applied")
        },
        CloudConformanceCase("an asset over the size limit is refused") { harness in
            let cloud = try await freshCloud(harness, limits: CloudLimits(maxAssetSize: 1_024))
            try await expectCloudError(.limitExceeded, "a 2 KB asset against a 1 KB limit") {
                try await cloud.uploadAsset(Data(repeating: 1, count: 2_048))
            }
            let fits = try await cloud.uploadAsset(Data(repeating: 1, count: 1_024))
            try expectEqual(fits.size, 1_024, "an asset at the limit")
        },
    ]
}
