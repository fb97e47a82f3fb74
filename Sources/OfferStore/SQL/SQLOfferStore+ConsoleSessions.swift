import Foundation
import OfferModel
import SQLKit

extension SQLOfferStore {
    func saveConsoleSession(_ session: ConsoleSessionRecord, keepingAtMost limit: Int) async throws {
        try await backend.transaction { database in
            let now = Date().unixMilliseconds
            try await database.delete(from: "console_sessions").where("expires_at", .lessThanOrEqual, SQLBind(now)).run()
            try await database.insert(into: "console_sessions").columns("digest", "admin", "csrf_token", "expires_at")
                .values(SQLBind(session.digest), SQLBind(session.admin), SQLBind(session.csrfToken), SQLBind(session.expiresAt.unixMilliseconds))
                .run()
            // The oldest go first beyond the limit (one statement both databases read alike).
            try await database.raw(
                """
                DELETE FROM console_sessions WHERE expires_at < \
                (SELECT expires_at FROM console_sessions ORDER BY expires_at DESC LIMIT 1 OFFSET \(unsafeRaw: String(max(limit - 1, 0))))
                """
            ).run()
        }
    }

    func consoleSession(digest: String) async throws -> ConsoleSessionRecord? {
        struct Row: Decodable {
            var digest, admin, csrfToken: String
            var expiresAt: Int64
        }
        let row = try await backend.reading { database in
            try await database.select().columns("digest", "admin", "csrf_token", "expires_at").from("console_sessions")
                .where("digest", .equal, digest)
                .first(decoding: Row.self, keyDecodingStrategy: .convertFromSnakeCase)
        }
        return row.map {
            ConsoleSessionRecord(digest: $0.digest, admin: $0.admin, csrfToken: $0.csrfToken, expiresAt: Date(unixMilliseconds: $0.expiresAt))
        }
    }

    func deleteConsoleSession(digest: String) async throws {
        try await backend.transaction { database in
            try await database.delete(from: "console_sessions").where("digest", .equal, digest).run()
        }
    }
}
