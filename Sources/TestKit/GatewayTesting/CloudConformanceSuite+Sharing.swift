import Foundation
import GatewayCore

extension CloudConformanceSuite {
    /// Users, zone-wide shares and their permissions (``CloudUsers`` over the cloud under test):
    /// run them against every cloud that keeps zones of several owners.
    public static var sharingCases: [CloudConformanceCase] {
        [
            CloudConformanceCase("each user's private database holds their own zones only") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let users = CloudUsers(store: cloud)
                let alice = users.database(for: "_alice", scope: nil)
                let bob = users.database(for: "_bob", scope: nil)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "alice's")])
                try await bob.createZone(zone)
                try await saved(bob, [note("b1", title: "bob's")])
                guard try await alice.zones() == [zone], try await bob.zones() == [zone] else {
                    throw ConformanceFailure("each user sees their own zone of the same name, as \(ZoneID.defaultOwnerName)")
                }
                let bobFeed = try await bob.fetchChanges(in: zone, since: nil, limit: 100)
                guard bobFeed.modified.map(\.id) == [id("b1")] else { throw ConformanceFailure("bob's zone holds bob's record only: \(bobFeed.modified.map(\.id))") }
                let alicesZone = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                try await expectCloudError(.zoneNotFound, "bob reading alice's unshared zone") {
                    _ = try await bob.fetchChanges(in: alicesZone, since: nil, limit: 10)
                }
                guard try await bob.lookup([id("a1", alicesZone)]) == [nil] else { throw ConformanceFailure("bob looked up a record of alice's unshared zone") }
                guard try await users.database(for: CloudUsers.defaultUser, scope: nil).zones().isEmpty else {
                    throw ConformanceFailure("the default user sees other users' zones")
                }
            },
            CloudConformanceCase("an accepted read-write participant reads and writes the shared zone; the owner sees the writes") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let users = CloudUsers(store: cloud)
                let alice = users.database(for: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "first")])
                try await users.updateShare(of: zone.zoneName, ownedBy: "_alice") { $0.setParticipant("_bob", permission: .readWrite) }
                let bob = users.database(for: "_bob", scope: .shared)
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                guard try await bob.zones().isEmpty else { throw ConformanceFailure("a share not accepted yet put the zone in bob's shared database") }
                try await users.accept(zone.zoneName, ownedBy: "_alice", as: "_bob")
                guard try await bob.zones() == [shared] else { throw ConformanceFailure("after accepting, bob's shared database lists \(try await bob.zones())") }
                let feed = try await bob.fetchChanges(in: shared, since: nil, limit: 100)
                guard feed.modified.contains(where: { $0.id == id("a1", shared) }),
                    feed.modified.contains(where: { $0.id.recordName == ZoneShare.recordName && $0.recordType == ZoneShare.recordType })
                else { throw ConformanceFailure("bob's feed of the shared zone holds alice's record and the share, named with owner _alice") }
                let results = try await bob.modify([.create(note("b1", title: "from bob", zone: shared))], in: shared, atomic: false)
                guard case .saved(let record) = results[0], record.id == id("b1", shared) else { throw ConformanceFailure("bob's save into the shared zone: \(results)") }
                guard try await alice.lookup([id("b1")])[0]?.fields["title"] == .string("from bob") else {
                    throw ConformanceFailure("alice does not see bob's record in her zone")
                }
                try await expectCloudError(.zoneNotFound, "the shared zone in bob's private database") {
                    _ = try await users.database(for: "_bob", scope: .private).fetchChanges(in: shared, since: nil, limit: 10)
                }
                try await expectCloudError(.zoneNotFound, "alice's own zone in her shared database") {
                    _ = try await users.database(for: "_alice", scope: .shared).fetchChanges(in: zone, since: nil, limit: 10)
                }
            },
            CloudConformanceCase("a read-only participant's writes fail per record with a permission error and change nothing") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let users = CloudUsers(store: cloud)
                let alice = users.database(for: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "first")])
                try await users.updateShare(of: zone.zoneName, ownedBy: "_alice") { $0.setParticipant("_carol", permission: .readOnly) }
                try await users.accept(zone.zoneName, ownedBy: "_alice", as: "_carol")
                let carol = users.database(for: "_carol", scope: nil)
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                let before = try await alice.currentChangeToken(in: zone)
                for atomic in [false, true] {
                    let edited = try await carol.lookup([id("a1", shared)])[0]!.withFields(["title": .string("carol's edit")])
                    let results = try await carol.modify(
                        [.update(edited), .create(note("c1", title: "new", zone: shared)), .forceDelete(id("a1", shared))], in: shared, atomic: atomic)
                    guard results.count == 3, results.allSatisfy({ $0.error?.code == .permissionFailure }),
                        results.map(\.recordID) == [id("a1", shared), id("c1", shared), id("a1", shared)]
                    else { throw ConformanceFailure("carol's writes (atomic: \(atomic)) were not each refused with permissionFailure: \(results)") }
                }
                guard try await alice.currentChangeToken(in: zone) == before, try await alice.lookup([id("a1")])[0]?.fields["title"] == .string("first") else {
                    throw ConformanceFailure("a refused write changed alice's zone")
                }
                guard try await carol.fetchChanges(in: shared, since: nil, limit: 10).modified.contains(where: { $0.id == id("a1", shared) }) else {
                    throw ConformanceFailure("a read-only participant cannot read the zone")
                }
            },
            CloudConformanceCase("removing a participant or deleting the share takes the zone away at once, and moves the feed") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let users = CloudUsers(store: cloud)
                let alice = users.database(for: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await users.updateShare(of: zone.zoneName, ownedBy: "_alice") {
                    $0.setParticipant("_bob", permission: .readWrite)
                    $0.setParticipant("_carol", permission: .readOnly)
                }
                for user in ["_bob", "_carol"] { try await users.accept(zone.zoneName, ownedBy: "_alice", as: user) }
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                let bob = users.database(for: "_bob", scope: .shared)
                let carol = users.database(for: "_carol", scope: .shared)
                let token = try await carol.currentChangeToken(in: shared)
                try await users.updateShare(of: zone.zoneName, ownedBy: "_alice") { $0.removeParticipant("_bob") }
                guard try await bob.zones().isEmpty else { throw ConformanceFailure("a removed participant still lists the zone") }
                try await expectCloudError(.zoneNotFound, "a removed participant's read") { _ = try await bob.fetchChanges(in: shared, since: nil, limit: 10) }
                let moved = try await carol.fetchChanges(in: shared, since: token, limit: 10)
                guard moved.modified.map(\.id.recordName) == [ZoneShare.recordName] else {
                    throw ConformanceFailure("changing participants did not move the share in the zone's feed: \(moved.modified.map(\.id))")
                }
                guard try await users.deleteShare(of: zone.zoneName, ownedBy: "_alice"), try await carol.zones().isEmpty else {
                    throw ConformanceFailure("deleting the share left the zone in carol's shared database")
                }
                guard try await alice.zones() == [zone] else { throw ConformanceFailure("deleting the share touched alice's zone") }
            },
            CloudConformanceCase("only the owner changes a share; a share record must be a zone-wide share") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let users = CloudUsers(store: cloud)
                let alice = users.database(for: "_alice", scope: .private)
                try await alice.createZone(zone)
                let share = try await users.updateShare(of: zone.zoneName, ownedBy: "_alice") { $0.setParticipant("_bob", permission: .readWrite) }
                try await users.accept(zone.zoneName, ownedBy: "_alice", as: "_bob")
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                var promoted = share
                promoted.setParticipant("_mallory", permission: .readWrite)
                let bobs = try await users.database(for: "_bob", scope: .shared).modify([.forceReplace(promoted.record(in: shared))], in: shared, atomic: false)
                guard bobs[0].error?.code == .permissionFailure else { throw ConformanceFailure("a participant changed the share: \(bobs)") }
                let malformed = Record(
                    id: id(ZoneShare.recordName), recordType: ZoneShare.recordType, fields: ["participants": .list([.string("_bob"), .string("ADMIN")])])
                let hierarchy = Record(id: id("root-share"), recordType: ZoneShare.recordType)
                let results = try await alice.modify([.forceReplace(malformed), .forceReplace(hierarchy)], in: zone, atomic: false)
                guard results.allSatisfy({ $0.error?.code == .invalidArguments }) else {
                    throw ConformanceFailure("a malformed share and a record-hierarchy share were saved: \(results)")
                }
                try await expectCloudError(.unknownItem, "accepting a share that does not invite the user") {
                    _ = try await users.accept(zone.zoneName, ownedBy: "_alice", as: "_mallory")
                }
            },
            CloudConformanceCase("a share's public permission lets any user accept it with that permission") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let users = CloudUsers(store: cloud)
                let alice = users.database(for: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "public")])
                try await users.updateShare(of: zone.zoneName, ownedBy: "_alice") { $0.publicPermission = .readOnly }
                let joined = try await users.accept(zone.zoneName, ownedBy: "_alice", as: "_dave")
                guard joined.participant("_dave") == ShareParticipant(userRecordName: "_dave", permission: .readOnly, acceptance: .accepted, role: .publicUser) else {
                    throw ConformanceFailure("dave joined as \(String(describing: joined.participant("_dave")))")
                }
                let dave = users.database(for: "_dave", scope: .shared)
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                guard try await dave.lookup([id("a1", shared)])[0] != nil else { throw ConformanceFailure("dave cannot read the zone he joined") }
                let write = try await dave.modify([.create(note("d1", title: "no", zone: shared))], in: shared, atomic: false)
                guard write[0].error?.code == .permissionFailure else { throw ConformanceFailure("a public read-only participant wrote: \(write)") }
                guard try await users.shares(with: "_dave").map(\.zoneName) == [zone.zoneName], try await users.shares(ownedBy: "_alice").count == 1 else {
                    throw ConformanceFailure("the share is not listed for its owner and its participant")
                }
            },
            CloudConformanceCase("zones made before users belong to the default user, who can share them") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                try await cloud.createZone(zone)
                try await saved(cloud, [note("old", title: "from before users")])
                let users = CloudUsers(store: cloud)
                let owner = users.database(for: CloudUsers.defaultUser, scope: .private)
                guard try await owner.zones() == [zone], try await owner.lookup([id("old")])[0] != nil else {
                    throw ConformanceFailure("the default user does not own the zones made before users")
                }
                guard try await users.database(for: "_alice", scope: nil).zones().isEmpty else { throw ConformanceFailure("another user sees them") }
                try await users.updateShare(of: zone.zoneName, ownedBy: CloudUsers.defaultUser) { $0.setParticipant("_alice", permission: .readOnly) }
                try await users.accept(zone.zoneName, ownedBy: CloudUsers.defaultUser, as: "_alice")
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: CloudUsers.defaultUser)
                guard try await users.database(for: "_alice", scope: .shared).zones() == [shared],
                    try await users.database(for: "_alice", scope: .shared).lookup([id("old", shared)])[0] != nil
                else { throw ConformanceFailure("alice cannot read the default user's shared zone") }
            },
        ]
    }

    static func saved(_ cloud: any CloudDatabase, _ records: [Record]) async throws {
        let zone = records[0].id.zoneID
        for result in try await cloud.modify(records.map { .create($0) }, in: zone, atomic: false) {
            if let error = result.error { throw ConformanceFailure("saving \(result.recordID) failed: \(error)") }
        }
    }
}
