import Foundation
import GatewayCore

extension CloudConformanceSuite {
    /// Users, zone-wide shares and their permissions, each user through their own client
    /// (``CloudConformanceHarness/client(of:asUser:scope:)``): run them against every cloud that
    /// keeps zones of several owners, directly and through the endpoint.
    public static var sharingCases: [CloudConformanceCase] {
        [
            CloudConformanceCase("each user's private database holds their own zones only") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: nil)
                let bob = try await harness.client(of: cloud, asUser: "_bob", scope: nil)
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
                    try await bob.fetchChanges(in: alicesZone, since: nil, limit: 10)
                }
                guard try await bob.lookup([id("a1", alicesZone)]) == [nil] else { throw ConformanceFailure("bob looked up a record of alice's unshared zone") }
                guard try await harness.client(of: cloud, asUser: CloudUsers.defaultUser, scope: nil).zones().isEmpty else {
                    throw ConformanceFailure("the default user sees other users' zones")
                }
            },
            CloudConformanceCase("an accepted read-write participant reads and writes the shared zone; the owner sees the writes") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "first")])
                try await alice.updateShare(of: zone.zoneName) { $0.setParticipant("_bob", permission: .readWrite) }
                let bob = try await harness.client(of: cloud, asUser: "_bob", scope: .shared)
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                guard try await bob.zones().isEmpty else { throw ConformanceFailure("a share not accepted yet put the zone in bob's shared database") }
                try await bob.acceptShare(of: zone.zoneName, ownedBy: "_alice")
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
                    try await harness.client(of: cloud, asUser: "_bob", scope: .private).fetchChanges(in: shared, since: nil, limit: 10)
                }
                try await expectCloudError(.zoneNotFound, "alice's own zone in her shared database") {
                    try await harness.client(of: cloud, asUser: "_alice", scope: .shared).fetchChanges(in: zone, since: nil, limit: 10)
                }
            },
            CloudConformanceCase("a read-only participant's writes fail per record with a permission error and change nothing") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "first")])
                try await alice.updateShare(of: zone.zoneName) { $0.setParticipant("_carol", permission: .readOnly) }
                let carol = try await harness.client(of: cloud, asUser: "_carol", scope: nil)
                try await carol.acceptShare(of: zone.zoneName, ownedBy: "_alice")
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                let before = try await alice.currentChangeToken(in: zone)
                for atomic in [false, true] {
                    let edited = try await carol.lookup([id("a1", shared)])[0]!.withFields(["title": .string("carol's edit")])
                    let results = try await carol.modify(
                        [.update(edited), .create(note("c1", title: "new", zone: shared)), .forceDelete(id("c2", shared))], in: shared, atomic: atomic)
                    guard results.count == 3, results.allSatisfy({ $0.error?.code == .permissionFailure }),
                        results.map(\.recordID) == [id("a1", shared), id("c1", shared), id("c2", shared)]
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
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await alice.updateShare(of: zone.zoneName) {
                    $0.setParticipant("_bob", permission: .readWrite)
                    $0.setParticipant("_carol", permission: .readOnly)
                }
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                let bob = try await harness.client(of: cloud, asUser: "_bob", scope: .shared)
                let carol = try await harness.client(of: cloud, asUser: "_carol", scope: .shared)
                for user in [bob, carol] { try await user.acceptShare(of: zone.zoneName, ownedBy: "_alice") }
                let token = try await carol.currentChangeToken(in: shared)
                try await alice.updateShare(of: zone.zoneName) { $0.removeParticipant("_bob") }
                guard try await bob.zones().isEmpty else { throw ConformanceFailure("a removed participant still lists the zone") }
                try await expectCloudError(.zoneNotFound, "a removed participant's read") { try await bob.fetchChanges(in: shared, since: nil, limit: 10) }
                let moved = try await carol.fetchChanges(in: shared, since: token, limit: 10)
                guard moved.modified.map(\.id.recordName) == [ZoneShare.recordName] else {
                    throw ConformanceFailure("changing participants did not move the share in the zone's feed: \(moved.modified.map(\.id))")
                }
                guard try await carol.leaveShare(of: zone.zoneName, ownedBy: "_alice"), try await carol.zones().isEmpty else {
                    throw ConformanceFailure("leaving the share left the zone in carol's shared database")
                }
                try await expectCloudError(.unknownItem, "carol accepting again after leaving, without a new invitation") {
                    try await carol.acceptShare(of: zone.zoneName, ownedBy: "_alice")
                }
            },
            CloudConformanceCase("deleting the share takes the zone from every participant; the owner keeps it") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await alice.updateShare(of: zone.zoneName) { $0.setParticipant("_carol", permission: .readOnly) }
                let carol = try await harness.client(of: cloud, asUser: "_carol", scope: .shared)
                try await carol.acceptShare(of: zone.zoneName, ownedBy: "_alice")
                guard try await alice.ownedShares().map(\.zoneName) == [zone.zoneName], try await carol.joinedShares().map(\.owner) == ["_alice"] else {
                    throw ConformanceFailure("the share is not listed for its owner and its participant")
                }
                guard try await alice.deleteShare(of: zone.zoneName), try await carol.zones().isEmpty else {
                    throw ConformanceFailure("deleting the share left the zone in carol's shared database")
                }
                guard try await alice.zones() == [zone], try await !alice.deleteShare(of: zone.zoneName) else {
                    throw ConformanceFailure("deleting the share touched alice's zone, or a second delete found a share")
                }
            },
            CloudConformanceCase("only the owner changes a share; a share record must be a zone-wide share; acceptance is the participant's") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: .private)
                try await alice.createZone(zone)
                let share = try await alice.updateShare(of: zone.zoneName) { $0.setParticipant("_bob", permission: .readWrite) }
                let bob = try await harness.client(of: cloud, asUser: "_bob", scope: .shared)
                try await bob.acceptShare(of: zone.zoneName, ownedBy: "_alice")
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                var promoted = share
                promoted.setParticipant("_mallory", permission: .readWrite)
                let bobs = try await bob.modify([.forceReplace(promoted.record(in: shared))], in: shared, atomic: false)
                guard bobs[0].error?.code == .permissionFailure else { throw ConformanceFailure("a participant changed the share: \(bobs)") }
                let malformed = Record(
                    id: id(ZoneShare.recordName), recordType: ZoneShare.recordType, fields: ["participants": .list([.string("_bob"), .string("ADMIN")])])
                let hierarchy = Record(id: id("root-share"), recordType: ZoneShare.recordType)
                let results = try await alice.modify([.forceReplace(malformed), .forceReplace(hierarchy)], in: zone, atomic: false)
                guard results.allSatisfy({ $0.error?.code == .invalidArguments }) else {
                    throw ConformanceFailure("a malformed share and a record-hierarchy share were saved: \(results)")
                }
                // An owner who writes a participant as accepted does not accept for them.
                try await alice.updateShare(of: zone.zoneName) { $0.setParticipant("_mallory", permission: .readOnly) }
                var forced = try await alice.share(of: zone.zoneName)!
                forced.participants = forced.participants.map { var entry = $0; entry.acceptance = .accepted; return entry }
                _ = try await alice.modify([.replace(forced.record(in: zone))], in: zone, atomic: true)
                guard try await alice.share(of: zone.zoneName)?.participant("_mallory")?.acceptance == .pending,
                    try await harness.client(of: cloud, asUser: "_mallory", scope: .shared).zones().isEmpty
                else { throw ConformanceFailure("the owner accepted the share on mallory's behalf") }
                try await expectCloudError(.unknownItem, "accepting a share that does not invite the user") {
                    try await harness.client(of: cloud, asUser: "_eve", scope: .shared).acceptShare(of: zone.zoneName, ownedBy: "_alice")
                }
            },
            CloudConformanceCase("a share's public permission lets any user accept it with that permission") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: .private)
                try await alice.createZone(zone)
                try await saved(alice, [note("a1", title: "public")])
                try await alice.updateShare(of: zone.zoneName) { $0.publicPermission = .readOnly }
                let dave = try await harness.client(of: cloud, asUser: "_dave", scope: .shared)
                let joined = try await dave.acceptShare(of: zone.zoneName, ownedBy: "_alice")
                guard joined.participant("_dave") == ShareParticipant(userRecordName: "_dave", permission: .readOnly, acceptance: .accepted, role: .publicUser) else {
                    throw ConformanceFailure("dave joined as \(String(describing: joined.participant("_dave")))")
                }
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: "_alice")
                guard try await dave.lookup([id("a1", shared)])[0] != nil else { throw ConformanceFailure("dave cannot read the zone he joined") }
                let write = try await dave.modify([.create(note("d1", title: "no", zone: shared))], in: shared, atomic: false)
                guard write[0].error?.code == .permissionFailure else { throw ConformanceFailure("a public read-only participant wrote: \(write)") }
            },
            CloudConformanceCase("zones made before users belong to the default user, who can share them") { harness in
                let cloud = try await harness.makeCloud(limits: .cloudKit)
                try await cloud.createZone(zone)
                try await saved(cloud, [note("old", title: "from before users")])
                let owner = try await harness.client(of: cloud, asUser: CloudUsers.defaultUser, scope: .private)
                guard try await owner.zones() == [zone], try await owner.lookup([id("old")])[0] != nil else {
                    throw ConformanceFailure("the default user does not own the zones made before users")
                }
                let alice = try await harness.client(of: cloud, asUser: "_alice", scope: nil)
                guard try await alice.zones().isEmpty else { throw ConformanceFailure("another user sees them") }
                try await owner.updateShare(of: zone.zoneName) { $0.setParticipant("_alice", permission: .readOnly) }
                try await alice.acceptShare(of: zone.zoneName, ownedBy: CloudUsers.defaultUser)
                let shared = ZoneID(zoneName: zone.zoneName, ownerName: CloudUsers.defaultUser)
                guard try await alice.zones() == [shared], try await alice.lookup([id("old", shared)])[0] != nil else {
                    throw ConformanceFailure("alice cannot read the default user's shared zone")
                }
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
