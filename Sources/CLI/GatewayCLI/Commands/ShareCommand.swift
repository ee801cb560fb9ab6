import ArgumentParser
import Foundation
import GatewayConfig
import GatewayCore
import GatewayKinds

/// `gateway share`: zone-wide shares of the config's cloud, acting as its `cloud.user`.
struct ShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Share zones with other users of the cloud, and accept or leave what others shared (see docs/sharing.md).",
        subcommands: [List.self, Create.self, Add.self, Remove.self, Delete.self, Accept.self, Leave.self])

    /// A permission as the commands spell it.
    enum Permission: String, ExpressibleByArgument, CaseIterable {
        case none, readOnly = "read-only", readWrite = "read-write"

        var cloud: SharePermission {
            switch self {
            case .none: .none
            case .readOnly: .readOnly
            case .readWrite: .readWrite
            }
        }
    }

    /// What a participant may be given, as the commands spell it.
    enum ParticipantPermission: String, ExpressibleByArgument, CaseIterable {
        case readOnly = "read-only", readWrite = "read-write"

        var cloud: SharePermission { self == .readOnly ? .readOnly : .readWrite }
    }

    /// Runs `body` with the config's cloud as its user sees it; closes the cloud after.
    @discardableResult
    static func withShares<T: Sendable>(_ options: ConfigOptions, _ body: (any ShareManaging) async throws -> T) async throws -> T {
        let configuration = try options.load()
        try GatewayStores.prepareStateDirectory(configuration)
        let cloud = try await GatewayStores.openCloud(configuration)
        do {
            guard let shares = cloud as? any ShareManaging else {
                throw GatewayError(.shareRefused, "the \(configuration.cloud.kind) cloud keeps no shares")
            }
            let result = try await body(shares)
            await cloud.close()
            return result
        } catch let error as CloudError {
            await cloud.close()
            throw GatewayError(.shareRefused, error.message, underlying: error)
        } catch {
            await cloud.close()
            throw error
        }
    }

    /// Asks a `gateway run` of this config, if one runs, to sync now (SIGUSR1), so a zone just
    /// accepted or left gains or loses its adapter without waiting for the interval.
    static func nudgeRunningGateway(_ options: ConfigOptions) {
        // Only `gateway run` handles SIGUSR1; to a `gateway sync` holding the lock it would be fatal.
        guard let configuration = try? options.load(), !configuration.sharedTemplates.isEmpty,
            let pid = ProcessLock.holder(stateDirectory: configuration.context.stateDirectory), pid > 0,
            let arguments = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline")?.split(separator: 0).map({ String(decoding: $0, as: UTF8.self) }),
            arguments.dropFirst().first == "run", kill(pid, SIGUSR1) == 0
        else { return }
        Console.out("Asked the running gateway (process \(pid)) to sync now.\n")
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List the shares this user owns and those shared with them.")
        @OptionGroup var options: ConfigOptions
        @Flag(name: .long, help: "Print JSON.") var json = false

        struct Line: Encodable {
            var zone: String
            var owner: String
            var publicPermission: String
            /// For the user's own shares: every participant; for others', the user's own entry.
            var participants: [Participant]
        }
        struct Participant: Encodable {
            var user: String
            var permission: String
            var status: String
        }

        func run() async throws {
            let (owned, joined, me) = try await ShareCommand.withShares(options) { shares in
                (try await shares.ownedShares(), try await shares.joinedShares(), try await shares.shareUserRecordName())
            }
            func line(_ share: ZoneShare, only user: String?) -> Line {
                Line(
                    zone: share.zoneName, owner: share.owner, publicPermission: share.publicPermission.rawValue,
                    participants: share.participants.filter { user == nil || $0.userRecordName == user }.map {
                        Participant(user: $0.userRecordName, permission: $0.permission.rawValue, status: $0.acceptance.rawValue)
                    })
            }
            let lines = owned.map { line($0, only: nil) } + joined.map { line($0, only: me) }
            if json { return try Console.json(lines) }
            guard !lines.isEmpty else { return Console.out("No shares: `gateway share create ZONE` shares one of this user's zones.\n") }
            var rows = [["zone", "owner", "public", "participant", "permission", "status"]]
            for line in lines {
                if line.participants.isEmpty { rows.append([line.zone, line.owner, line.publicPermission, "-", "-", "-"]) }
                for participant in line.participants {
                    rows.append([line.zone, line.owner, line.publicPermission, participant.user, participant.permission, participant.status])
                }
            }
            Console.out(TextTable.render(rows))
        }
    }

    struct Create: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Share one of this user's zones (or change its public permission).")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The zone to share.") var zone: String
        @Option(name: .customLong("public"), help: "What any user may do after accepting on their own: none, read-only or read-write.")
        var publicPermission: Permission = .none

        func run() async throws {
            let permission = publicPermission.cloud
            try await ShareCommand.withShares(options) { shares in
                try await shares.updateShare(of: zone) { $0.publicPermission = permission }
            }
            Console.out("Zone \(zone) is shared (public permission: \(publicPermission.rawValue)); add participants with `gateway share add \(zone) USER`.\n")
        }
    }

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Invite a user to a shared zone, or change their permission; they accept with `gateway share accept`.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The shared zone.") var zone: String
        @Argument(help: "The user record name to invite.") var user: String
        @Option(name: .long, help: "read-only or read-write.") var permission: ParticipantPermission = .readOnly

        func validate() throws {
            guard CloudUsers.isValidUserName(user) else {
                throw ValidationError("'\(user)' is not a user record name (1 to 255 printable ASCII characters, no spaces or slashes)")
            }
        }

        func run() async throws {
            let (user, permission) = (user, permission.cloud)
            try await ShareCommand.withShares(options) { shares in
                try await shares.updateShare(of: zone) { share in
                    guard share.owner != user else { throw CloudError(.invalidArguments, "\(user) owns zone \(share.zoneName); invite another user") }
                    share.setParticipant(user, permission: permission)
                }
            }
            Console.out("\(user) is invited to zone \(zone) (\(permission.rawValue)).\n")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Take a participant out of a shared zone; they lose it at once.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The shared zone.") var zone: String
        @Argument(help: "The participant's user record name.") var user: String

        func run() async throws {
            let user = user
            try await ShareCommand.withShares(options) { shares in
                guard try await shares.share(of: zone)?.participant(user) != nil else {
                    throw CloudError(.unknownItem, "\(user) is not a participant of zone \(zone)'s share")
                }
                try await shares.updateShare(of: zone) { $0.removeParticipant(user) }
            }
            Console.out("\(user) no longer shares zone \(zone).\n")
        }
    }

    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Stop sharing a zone: every participant loses it at once.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The shared zone.") var zone: String

        func run() async throws {
            let deleted = try await ShareCommand.withShares(options) { try await $0.deleteShare(of: zone) }
            Console.out(deleted ? "Zone \(zone) is no longer shared.\n" : "Zone \(zone) was not shared.\n")
        }
    }

    struct Accept: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Accept a zone another user shared: it joins this user's shared database, and `database: shared` templates sync it.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The owner's user record name.") var owner: String
        @Argument(help: "The zone.") var zone: String

        func run() async throws {
            let (share, me) = try await ShareCommand.withShares(options) { shares in
                (try await shares.acceptShare(of: zone, ownedBy: owner), try await shares.shareUserRecordName())
            }
            Console.out("Accepted zone \(zone) of \(owner) (\(share.participant(me)?.permission.rawValue ?? "?")).\n")
            ShareCommand.nudgeRunningGateway(options)
        }
    }

    struct Leave: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Leave a zone another user shared; it leaves this user's shared database.")
        @OptionGroup var options: ConfigOptions
        @Argument(help: "The owner's user record name.") var owner: String
        @Argument(help: "The zone.") var zone: String

        func run() async throws {
            let left = try await ShareCommand.withShares(options) { try await $0.leaveShare(of: zone, ownedBy: owner) }
            Console.out(left ? "Left zone \(zone) of \(owner).\n" : "This user was not in zone \(zone) of \(owner)'s share.\n")
            if left { ShareCommand.nudgeRunningGateway(options) }
        }
    }
}
