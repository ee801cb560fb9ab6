import Foundation
import GatewayCore

/// What the cloud conformance suite needs from an implementation under test: fresh stores, a
/// second client on the same store, and a few ways to age or damage the store that no public API
/// offers.
public protocol CloudConformanceHarness: Sendable {
    /// A cloud over a new, empty store, enforcing `limits`.
    func makeCloud(limits: CloudLimits) async throws -> any CloudDatabase

    /// Another client of the store behind `cloud`, as another process or gateway would hold one
    /// (its own connections, not a shared object).
    func makeSecondClient(of cloud: any CloudDatabase) async throws -> any CloudDatabase

    /// Removes every tombstone in the store now, as if the retention period had passed.
    func purgeAllTombstones(of cloud: any CloudDatabase) async throws

    /// Overwrites the stored bytes of an asset, as disk damage would.
    func corruptAsset(_ reference: AssetReference, in cloud: any CloudDatabase) async throws

    /// How many distinct asset blobs the store holds.
    func storedAssetCount(in cloud: any CloudDatabase) async throws -> Int

    /// `user`'s client of the store behind `cloud`, acting on `scope` (both of the user's
    /// databases, told apart by zone owner, when `nil`), with that user's share commands. The
    /// default is a `UserCloudDatabase` over `cloud`, for clouds that keep every user's zones.
    func client(of cloud: any CloudDatabase, asUser user: String, scope: CloudScope?) async throws -> any CloudDatabase & ShareManaging
}

extension CloudConformanceHarness {
    public func client(of cloud: any CloudDatabase, asUser user: String, scope: CloudScope?) async throws -> any CloudDatabase & ShareManaging {
        CloudUsers(store: cloud).database(for: user, scope: scope)
    }
}

/// One behaviour every `CloudDatabase` must show.
public typealias CloudConformanceCase = ConformanceCase<any CloudConformanceHarness>
