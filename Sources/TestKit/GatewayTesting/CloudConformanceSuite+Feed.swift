import Foundation
import GatewayCore

extension CloudConformanceSuite {
    static let feedCases: [CloudConformanceCase] = [
        CloudConformanceCase("the change feed lists each record once, in commit order, with tombstones for deletes") {
            harness in
            let cloud = try await freshCloud(harness)
            let records = try await create([note("a", title: "a"), note("b", title: "b"), note("c", title: "c")], in: cloud)
            let afterCreates = try await fetchAll(cloud, since: nil).token
            var edit = records[0]
            edit["title"] = .string("a2")
            _ = try saved(try await cloud.modify([.replace(edit)], in: zone, atomic: false)[0])
            _ = try await cloud.modify([.delete(records[1].id, changeTag: records[1].changeTag)], in: zone, atomic: false)
            let whole = try await fetchAll(cloud, since: nil)
            try expectEqual(whole.modified.map(\.id.recordName), ["c", "a"], "records of the whole feed in commit order")
            try expectEqual(whole.modified.last?.fields["title"], .string("a2"), "the feed holds the latest version")
            try expectEqual(whole.deleted, [records[1].id], "tombstones of the whole feed")
            let delta = try await fetchAll(cloud, since: afterCreates)
            try expectEqual(delta.modified.map(\.id.recordName), ["a"], "records changed since the token")
            try expectEqual(delta.deleted, [records[1].id], "records deleted since the token")
            let nothing = try await fetchAll(cloud, since: delta.token)
            try expect(nothing.modified.isEmpty && nothing.deleted.isEmpty, "no changes after the latest token")
        },
        CloudConformanceCase("paging with moreComing returns every change exactly once") { harness in
            let cloud = try await freshCloud(harness)
            let names = (0..<25).map { String(format: "r%02d", $0) }
            try await create(names.map { note($0, title: $0) }, in: cloud)
            var token: ChangeToken?
            var seen: [String] = []
            var pages = 0
            while true {
                let page = try await cloud.fetchChanges(in: zone, since: token, limit: 7)
                try expect(page.modified.count + page.deleted.count <= 7, "a page respects the limit")
                seen += page.modified.map(\.id.recordName)
                token = page.token
                pages += 1
                if !page.moreComing { break }
                try expect(pages < 50, "paging ends")
            }
            try expectEqual(seen, names, "records seen across pages")
            try expectEqual(pages, 4, "pages of 7 for 25 records")
        },
        CloudConformanceCase("paging never skips or repeats a change while another client commits") { harness in
            let cloud = try await freshCloud(harness)
            let writer = try await harness.makeSecondClient(of: cloud)
            let names = (0..<40).map { "w\($0)" }
            let writerDone = LockedValue(false)
            var replay: [String: String] = [:]
            var seenVersions = Set<String>()
            try await withThrowingTaskGroup(of: Void.self) { group in
                group.addTask {
                    // Set even when the writer fails, so the reader stops and the failure surfaces.
                    defer { writerDone.set(true) }
                    var random = SeededGenerator(seed: 42)
                    for round in 0..<120 {
                        var operations: [RecordOperation] = []
                        for name in names.shuffled(using: &random).prefix(Int.random(in: 1...4, using: &random)) {
                            operations.append(
                                random.chance(0.2)
                                    ? .forceDelete(id(name)) : .forceReplace(note(name, title: "\(name)@\(round)")))
                        }
                        _ = try await writer.modify(operations, in: zone, atomic: false)
                    }
                }
                var token: ChangeToken?
                let deadline = ContinuousClock.now + .seconds(120)
                while true {
                    let finished = writerDone.get()
                    try expect(ContinuousClock.now < deadline, "the writer finishes within 120 s")
                    let page = try await cloud.fetchChanges(in: zone, since: token, limit: 5)
                    for record in page.modified {
                        let tag = try unwrap(record.changeTag, "feed records carry change tags")
                        try expect(
                            seenVersions.insert("\(record.id.recordName)#\(tag)").inserted,
                            "version \(tag) of \(record.id.recordName) was delivered twice")
                        replay[record.id.recordName] = tag
                    }
                    for id in page.deleted { replay[id.recordName] = nil }
                    token = page.token
                    if finished && !page.moreComing { break }
                    if !page.moreComing { try await Task.sleep(for: .milliseconds(2)) }
                }
                try await group.waitForAll()
            }
            let current = try await cloud.lookup(names.map { id($0) })
            for (name, record) in zip(names, current) {
                try expectEqual(replay[name], record?.changeTag, "replayed version of \(name)")
            }
        },
        CloudConformanceCase("a token older than the purged tombstones expires; a current one keeps working") { harness in
            let cloud = try await freshCloud(harness)
            let records = try await create([note("a", title: "a"), note("b", title: "b")], in: cloud)
            let beforeDelete = try await fetchAll(cloud, since: nil).token
            _ = try await cloud.modify([.forceDelete(records[0].id)], in: zone, atomic: false)
            let afterDelete = try await fetchAll(cloud, since: beforeDelete).token
            try await harness.purgeAllTombstones(of: cloud)
            try await expectCloudError(.changeTokenExpired, "a token that needs a purged tombstone") {
                try await cloud.fetchChanges(in: zone, since: beforeDelete, limit: 10)
            }
            let current = try await cloud.fetchChanges(in: zone, since: afterDelete, limit: 10)
            try expect(current.modified.isEmpty && current.deleted.isEmpty, "an up-to-date token still works")
            let restart = try await fetchAll(cloud, since: nil)
            try expectEqual(restart.modified.map(\.id), [records[1].id], "a full fetch after purging")
            try expect(restart.deleted.isEmpty, "purged tombstones are gone from the feed")
        },
        CloudConformanceCase("a fetch from scratch pages past tombstones purged before it began") { harness in
            let cloud = try await freshCloud(harness)
            let names = (0..<10).map { "p\($0)" }
            try await create(names.map { note($0, title: $0) }, in: cloud)
            _ = try await cloud.modify([.forceDelete(id("p9"))], in: zone, atomic: false)
            try await harness.purgeAllTombstones(of: cloud)
            let all = try await fetchAll(cloud, since: nil, limit: 3)
            try expectEqual(all.modified.map(\.id.recordName), Array(names.prefix(9)), "records of a paged full fetch")
            _ = try await cloud.modify([.forceReplace(note("p0", title: "again"))], in: zone, atomic: false)
            let later = try await fetchAll(cloud, since: all.token, limit: 3)
            try expectEqual(later.modified.map(\.id.recordName), ["p0"], "the token of that fetch keeps working")
        },
        CloudConformanceCase("the current change token skips what the zone already holds") { harness in
            let cloud = try await freshCloud(harness)
            try await create([note("a", title: "a")], in: cloud)
            let token = try await cloud.currentChangeToken(in: zone)
            try expect(try await cloud.fetchChanges(in: zone, since: token, limit: 10).modified.isEmpty, "nothing after the current token")
            _ = try await cloud.modify([.forceReplace(note("b", title: "b"))], in: zone, atomic: false)
            try expectEqual(
                try await fetchAll(cloud, since: token).modified.map(\.id.recordName), ["b"], "changes after the current token")
            try expect(try await cloud.currentChangeToken(in: zone) != token, "the current token moves with a write")
            try await expectCloudError(.zoneNotFound, "the current token of a missing zone") {
                try await cloud.currentChangeToken(in: ZoneID(zoneName: "Missing"))
            }
        },
        CloudConformanceCase("a token the cloud did not issue is refused") { harness in
            let cloud = try await freshCloud(harness)
            try await expectCloudError(.invalidArguments, "a token of random bytes") {
                try await cloud.fetchChanges(in: zone, since: ChangeToken(data: Data([1, 2, 3])), limit: 10)
            }
        },
        CloudConformanceCase("change signals fire when another client writes to the zone") { harness in
            let cloud = try await freshCloud(harness)
            let writer = try await harness.makeSecondClient(of: cloud)
            try await expectChangeSignal(from: cloud.changeSignals(in: zone)) { round in
                _ = try await writer.modify([.forceReplace(note("signal", title: "\(round)"))], in: zone, atomic: false)
            }
        },
    ]
}
