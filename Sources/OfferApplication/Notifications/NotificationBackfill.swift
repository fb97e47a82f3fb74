public import AppStoreNotifications
public import AppStoreServerAPI
public import Foundation
import OfferModel
import OfferStore

/// Reads what the App Store sent over the last days (Get Notification History) and records it as if it had just
/// arrived: every notification verified and ingested by ``NotificationIngestor`` — customer facts, redemptions and
/// what became of them — idempotently, so a backfill over notifications already received changes nothing.
public struct NotificationBackfill: Sendable {
    /// The most days Apple keeps (``AppStoreServerAPIClient/notificationHistoryDays``).
    public static let maximumDays = AppStoreServerAPIClient.notificationHistoryDays

    let clients: [String: AppStoreServerAPIClient]
    let environments: [AppStoreEnvironment]
    let ingestor: NotificationIngestor

    /// - Parameters:
    ///   - clients: One App Store Server API client per app, by bundle identifier.
    ///   - environments: The environments to read, in order (each app's client must be configured for them).
    ///   - ingestor: Where the notifications go.
    public init(clients: [String: AppStoreServerAPIClient], environments: [AppStoreEnvironment], ingestor: NotificationIngestor) {
        self.clients = clients
        self.environments = environments
        self.ingestor = ingestor
    }

    /// Reads `days` days up to `now` for every app and environment, in the order of bundle identifiers, then
    /// environments, on the ``BackgroundLane`` (verifying and folding each notification is the lane's work, a
    /// notification at a time), where signing does not feel it.
    ///
    /// - Parameters:
    ///   - days: 1 to ``maximumDays``.
    ///   - now: The end of the span.
    /// - Returns: What became of the notifications read, with one problem line per notification refused or failed,
    ///   and per app and environment that could not be read.
    public func run(days: Int, now: Date = Date()) async -> ReplaySummary {
        await BackgroundLane.shared.run { await replay(days: days, now: now) }
    }

    private func replay(days: Int, now: Date) async -> ReplaySummary {
        var summary = ReplaySummary()
        guard (1...Self.maximumDays).contains(days) else {
            summary.problems.append("the number of days must be 1 to \(Self.maximumDays) (Apple keeps \(Self.maximumDays) days of notifications)")
            return summary
        }
        let start = now.addingTimeInterval(-Double(days) * 86_400)
        for bundleIdentifier in clients.keys.sorted() {
            guard let client = clients[bundleIdentifier] else { continue }
            for environment in environments {
                let tally = Tally()
                do {
                    _ = try await client.notificationHistory(from: start, to: now, environment: environment, now: now) { payload in
                        await tally.ingest(payload, with: ingestor, where: "\(bundleIdentifier) \(environment.rawValue)")
                        await Task.yield()  // a notification at a time
                    }
                } catch {
                    await tally.fail("\(bundleIdentifier) \(environment.rawValue): the history could not be read: \(error.message)")
                }
                summary.add(await tally.summary)
            }
        }
        return summary
    }

    /// The summary of one reading, kept across the client's calls.
    private actor Tally {
        var summary = ReplaySummary()
        var count = 0

        func ingest(_ payload: String, with ingestor: NotificationIngestor, where source: String) async {
            count += 1
            let number = count
            do {
                summary.add(try await ingestor.ingest(signedPayload: payload))
            } catch {
                summary.add(error, at: "\(source), notification \(number)")
            }
        }

        func fail(_ problem: String) {
            summary.failed += 1
            summary.problems.append(problem)
        }
    }
}

extension ReplaySummary {
    /// Counts one notification's outcome.
    public mutating func add(_ outcome: IngestOutcome) {
        switch outcome {
        case .processed: processed += 1
        case .duplicate: duplicate += 1
        case .ignored: ignored += 1
        case .stale: stale += 1
        }
    }

    /// Counts one notification refused (or, when the store failed, to retry) with its problem, said at `place`.
    public mutating func add(_ error: OfferServiceError, at place: String) {
        if error.code == .storeUnavailable { failed += 1 } else { refused += 1 }
        problems.append("\(place): \(error.message)")
    }

    /// Adds another summary's counts and problems to this one.
    public mutating func add(_ other: ReplaySummary) {
        processed += other.processed
        duplicate += other.duplicate
        ignored += other.ignored
        stale += other.stale
        refused += other.refused
        failed += other.failed
        problems += other.problems
    }
}
