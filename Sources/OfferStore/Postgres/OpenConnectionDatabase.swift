import Logging
import NIOCore
import PostgresKit
import PostgresNIO
import SQLKit

/// A leased PostgreSQL connection as SQLKit's database (``PostgresBackend/read(_:)``), which refuses a statement once
/// the connection is closed instead of sending it.
///
/// postgres-nio (1.33) writes a statement to its channel without a promise: once the server has ended the connection
/// and NIO has torn the channel's handlers down, the statement reaches no one and its caller waits forever. That is
/// what a transaction met when the server ended its connection (`pg_terminate_backend`, a restart): its statement
/// failed, and the `ROLLBACK` after it never returned — nor the transaction, nor whoever waited for it (the decision
/// log's writer, a request). Here each statement is checked and handed to the connection on the connection's event
/// loop, where the channel is either still open (its handler takes the statement, and fails it if the connection is
/// closing) or seen closed before anything is sent.
struct OpenConnectionDatabase: SQLDatabase {
    let connection: PostgresConnection
    private let database: any SQLDatabase

    init(_ connection: PostgresConnection) {
        self.connection = connection
        self.database = connection.sql(queryLogLevel: nil)
    }

    var logger: Logger { database.logger }
    var eventLoop: any EventLoop { database.eventLoop }
    var version: (any SQLDatabaseReportedVersion)? { database.version }
    var dialect: any SQLDialect { database.dialect }
    var queryLogLevel: Logger.Level? { database.queryLogLevel }

    func execute(sql query: any SQLExpression, _ onRow: @escaping @Sendable (any SQLRow) -> Void) -> EventLoopFuture<Void> {
        connection.eventLoop.flatSubmit { [connection, database] in
            guard !connection.isClosed else {
                return connection.eventLoop.makeFailedFuture(OfferStoreError.connectionClosed)
            }
            return database.execute(sql: query, onRow)
        }
    }
}
