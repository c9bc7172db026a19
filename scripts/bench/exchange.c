/* What a 1 KB exchange of two ranks costs in MPI itself, three ways, in one job: MPI_Allreduce;
 * the exchange as outrun's transport does it (MPI_Isend, then MPI_Improbe for any source and
 * MPI_Imrecv into a buffer, polled with MPI_Test; the received vector added); and the same with
 * the receive posted before it is needed (MPI_Irecv into a fixed buffer). Each is timed over
 * ITERS repetitions, three rounds, and every sum is checked. Issue 43 asks whether pre-posted
 * receives would bring our 1 KB all-reduce within 2x of MPI_Allreduce (docs/performance.md §19).
 *
 *   mpicc -O2 scripts/bench/exchange.c -o /tmp/exchange
 *   mpirun -np 2 --bind-to core /tmp/exchange
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define N 128 /* doubles: 1 KB */
#define ITERS 200000

static void check(const double *c, const double *a, const char *what) {
  for (int i = 0; i < N; i++) {
    if (c[i] != 2.0 * a[i]) {
      fprintf(stderr, "exchange: %s summed %g at %d, not %g\n", what, c[i], i, 2.0 * a[i]);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
  }
}

static void wait_for(MPI_Request *r) {
  int done = 0;
  while (!done) MPI_Test(r, &done, MPI_STATUS_IGNORE);
}

int main(int argc, char **argv) {
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "exchange: run with 2 ranks (mpirun -np 2), not %d\n", size);
    MPI_Finalize();
    return 2;
  }
  int other = 1 - rank;
  double a[N], b[N], c[N];
  for (int i = 0; i < N; i++) a[i] = i;
  if (rank == 0) printf("round,allreduce_us,improbe_us,preposted_us\n");
  for (int round = 1; round <= 3; round++) {
    MPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int k = 0; k < ITERS; k++) MPI_Allreduce(a, c, N, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    double allreduce = (MPI_Wtime() - t) / ITERS;
    check(c, a, "MPI_Allreduce");

    MPI_Barrier(MPI_COMM_WORLD);
    t = MPI_Wtime();
    for (int k = 0; k < ITERS; k++) {
      MPI_Request s, q;
      MPI_Isend(a, N, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &s);
      int flag = 0, bytes;
      MPI_Message m;
      MPI_Status st;
      while (!flag) MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &m, &st);
      MPI_Get_count(&st, MPI_BYTE, &bytes);
      MPI_Imrecv(b, bytes, MPI_BYTE, &m, &q);
      wait_for(&q);
      for (int i = 0; i < N; i++) c[i] = a[i] + b[i];
      wait_for(&s);
    }
    double improbe = (MPI_Wtime() - t) / ITERS;
    check(c, a, "the probed exchange");

    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Request q;
    MPI_Irecv(b, N, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &q);
    t = MPI_Wtime();
    for (int k = 0; k < ITERS; k++) {
      MPI_Request s;
      MPI_Isend(a, N, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &s);
      wait_for(&q);
      for (int i = 0; i < N; i++) c[i] = a[i] + b[i];
      if (k + 1 < ITERS) MPI_Irecv(b, N, MPI_DOUBLE, other, 1, MPI_COMM_WORLD, &q);
      wait_for(&s);
    }
    double preposted = (MPI_Wtime() - t) / ITERS;
    check(c, a, "the pre-posted exchange");
    if (rank == 0) printf("%d,%.3f,%.3f,%.3f\n", round, allreduce * 1e6, improbe * 1e6, preposted * 1e6);
  }
  MPI_Finalize();
  return 0;
}
