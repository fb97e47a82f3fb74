import NIOCore

/// A task executor that runs its jobs on one NIO event loop: a task that prefers it
/// (`Task.detached(executorPreference:)`) runs its nonisolated code — a driver's async calls included — on the
/// thread that also reads that driver's sockets, instead of hopping to the shared cooperative pool and back at
/// every `await`.
package final class EventLoopTaskExecutor: TaskExecutor {
    package let eventLoop: any EventLoop

    package init(_ eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    package func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        eventLoop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
