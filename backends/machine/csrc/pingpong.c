/* MPI ping-pong between ranks 0 and 1 (`ma machine probe`): for each message size given on the command line,
 * rank 0 prints "bytes median_seconds best_seconds", the one-way time of the median and of the fastest of
 * `batches` batches, each batch as many round trips as fill `min_time` seconds.
 * With `exchange` first, every rank takes part instead: rounds of MPI_Sendrecv at distances 1, 2, 4, ... < size
 * (send to rank + d, receive from rank - d: the dissemination pattern of barriers and allgathers, so partners
 * change every round), and the time printed is per round, one message each way per rank. On more ranks than
 * cores that is the time a message waits for a partner the scheduler has taken off its core.
 * With `exchange-work`, the arguments after BATCHES are amounts of work instead of sizes: before each 8-byte
 * exchange every rank makes that many passes of a multiply-add over its own 32 KiB buffer (in L1), and the time
 * printed is wall seconds per message with that work between messages. With `work` (any number of ranks, one
 * is what the probe runs) rank 0 times the work alone: seconds per amount of work, no messages. With
 * `synchronised`, every batch of the exchange with work is paired with a batch of the same work on every rank at
 * once and no messages (the mean of the ranks' own times), run just before it, so that the host's drift between
 * batches falls out of their difference; it prints "passes seconds work_seconds": the work's median, and the
 * wall seconds per message as that median plus the median of the pairs' differences.
 * With `--stream MIB` first, a pass of work reads the next 32 KiB of a buffer of MIB MiB per rank instead (a sum),
 * so the work streams from memory as a program's large kernels do, and the ranks share the memory system.
 * Usage: ma_pingpong [--stream MIB] [exchange | exchange-work | work | synchronised] MIN_TIME BATCHES
 *        SIZE_OR_PASSES... */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double round_trips(char *buffer, int bytes, long count, int rank) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < count; i++) {
        if (rank == 0) {
            MPI_Send(buffer, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
            MPI_Recv(buffer, bytes, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
            MPI_Recv(buffer, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            MPI_Send(buffer, bytes, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
        }
    }
    return MPI_Wtime() - start;
}

/* `count` times the rounds at distances 1, 2, 4, ... < size; returns the seconds */
static double exchange_rounds(char *buffer, char *incoming, int bytes, long count, int rank, int size) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < count; i++)
        for (int d = 1; d < size; d *= 2)
            MPI_Sendrecv(buffer, bytes, MPI_BYTE, (rank + d) % size, 0, incoming, bytes, MPI_BYTE,
                         (rank - d + size) % size, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    return MPI_Wtime() - start;
}

#define WORK_DOUBLES 4096 /* 32 KiB: in L1, so the work costs the same on every core */
static double work_buffer[WORK_DOUBLES];
static volatile double work_sink;
static double *stream_buffer; /* --stream: the buffer the work reads through, stream_words long */
static long stream_words, stream_next;

static void work(long passes) {
    if (stream_buffer) {
        /* eight independent sums: one chain of dependent adds would time the adder's latency, not the memory */
        double sums[8] = {0.0};
        for (long p = 0; p < passes; p++) {
            if (stream_next + WORK_DOUBLES > stream_words)
                stream_next = 0;
            const double *chunk = stream_buffer + stream_next;
            for (int i = 0; i < WORK_DOUBLES; i += 8)
                for (int j = 0; j < 8; j++)
                    sums[j] += chunk[i + j];
            stream_next += WORK_DOUBLES;
        }
        work_sink = sums[0] + sums[1] + sums[2] + sums[3] + sums[4] + sums[5] + sums[6] + sums[7];
        return;
    }
    for (long p = 0; p < passes; p++)
        for (int i = 0; i < WORK_DOUBLES; i++)
            work_buffer[i] = work_buffer[i] * 0.999 + 0.001;
    work_sink = work_buffer[passes % WORK_DOUBLES];
}

/* `count` times the exchange rounds of exchange_rounds with `passes` of work before each message */
static double exchange_work_rounds(char *buffer, char *incoming, long passes, long count, int rank, int size) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < count; i++)
        for (int d = 1; d < size; d *= 2) {
            work(passes);
            MPI_Sendrecv(buffer, 8, MPI_BYTE, (rank + d) % size, 0, incoming, 8, MPI_BYTE, (rank - d + size) % size,
                         0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
    return MPI_Wtime() - start;
}

/* `count` times `passes` of work on rank 0 alone */
static double work_alone(long passes, long count, int rank) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    if (rank == 0)
        for (long i = 0; i < count; i++)
            work(passes);
    return MPI_Wtime() - start;
}

/* `count` times `passes` of work on every rank at once; the mean of the ranks' own seconds (a rank on a slower
 * core takes longer; what the others would wait for it is the exchange's to show) */
static double work_everywhere(long passes, long count, int size) {
    MPI_Barrier(MPI_COMM_WORLD);
    double start = MPI_Wtime();
    for (long i = 0; i < count; i++)
        work(passes);
    double own = MPI_Wtime() - start, sum = 0.0;
    MPI_Allreduce(&own, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / size;
}

/* messages one after another in one repetition: 2 per round trip, 1 per exchange round */
static double messages_per_repetition(int exchange, int size) {
    int rounds = 0;
    for (int d = 1; d < size; d *= 2)
        rounds++;
    return exchange ? (double)rounds : 2.0;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank, size;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (argc > 2 && strcmp(argv[1], "--stream") == 0) {
        stream_words = atol(argv[2]) * (1L << 20) / (long)sizeof(double);
        if (stream_words < WORK_DOUBLES || !(stream_buffer = malloc((size_t)stream_words * sizeof(double)))) {
            if (rank == 0)
                fprintf(stderr, "ma_pingpong: --stream %s: expected a buffer of at least 1 MiB that fits in memory\n",
                        argv[2]);
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        for (long i = 0; i < stream_words; i++) /* touch every page before any timing */
            stream_buffer[i] = 1e-9 * (double)(i % 1000);
        argc -= 2;
        argv += 2;
    }
    int exchange = argc > 1 && strcmp(argv[1], "exchange") == 0;
    int with_work = argc > 1 && strcmp(argv[1], "exchange-work") == 0;
    int alone = argc > 1 && strcmp(argv[1], "work") == 0;
    int everywhere = argc > 1 && strcmp(argv[1], "synchronised") == 0;
    int moded = exchange || with_work || alone || everywhere;
    argc -= moded;
    argv += moded;
    with_work = with_work || everywhere;
    exchange = exchange || with_work;
    if ((size < 2 && !alone) || argc < 4) {
        if (rank == 0)
            fprintf(stderr, "usage: mpiexec -n 2 ma_pingpong [--stream MIB] [exchange | exchange-work | work | "
                            "synchronised] MIN_TIME BATCHES SIZE_OR_PASSES...\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    double min_time = atof(argv[1]);
    int batches = atoi(argv[2]);
    if (batches < 1 || batches > 99)
        batches = 5;
    long largest = 0;
    for (int a = 3; a < argc; a++)
        if (atol(argv[a]) > largest)
            largest = atol(argv[a]);
    if (with_work || alone || everywhere)
        largest = 8; /* the arguments are passes of work; the messages carry 8 bytes */
    char *buffer = malloc((size_t)largest + 1), *incoming = malloc((size_t)largest + 1);
    memset(buffer, 1, (size_t)largest + 1);
    double times[99], works[99], differences[99];
    double messages = alone ? 1.0 : messages_per_repetition(exchange, size);
    for (int a = 3; a < argc; a++) {
        int bytes = atoi(argv[a]);
#define BATCH(count) (alone       ? work_alone(atol(argv[a]), (count), rank)                                    \
                      : with_work ? exchange_work_rounds(buffer, incoming, atol(argv[a]), (count), rank, size)   \
                      : exchange  ? exchange_rounds(buffer, incoming, bytes, (count), rank, size)                \
                                  : round_trips(buffer, bytes, (count), rank))
        BATCH(10); /* warm up: connection set-up, page faults */
        long count = 1;
        for (;;) { /* rank 0 decides how many batches fill min_time; every rank follows */
            double t = BATCH(count);
            int enough = t >= min_time;
            MPI_Bcast(&enough, 1, MPI_INT, 0, MPI_COMM_WORLD);
            if (enough)
                break;
            count *= 2;
        }
        for (int b = 0; b < batches; b++) {
            /* a message per work in every repetition: the work of one round is one message's */
            works[b] = everywhere ? work_everywhere(atol(argv[a]), (count) * (long)messages, size) /
                                        (messages * (double)count) : 0.0;
            times[b] = BATCH(count) / (messages * (double)count);
            differences[b] = times[b] - works[b];
        }
        qsort(times, (size_t)batches, sizeof(double), compare);
        qsort(works, (size_t)batches, sizeof(double), compare);
        qsort(differences, (size_t)batches, sizeof(double), compare);
        if (rank == 0 && everywhere)
            printf("%d %.9e %.9e\n", bytes, works[batches / 2] + differences[batches / 2], works[batches / 2]);
        else if (rank == 0)
            printf("%d %.9e %.9e\n", bytes, times[batches / 2], times[0]);
    }
    free(buffer);
    free(incoming);
    free(stream_buffer);
    MPI_Finalize();
    return 0;
}
