/* The /proc floor of a wait-chain analysis: opens and reads `stat` and `syscall` of every thread
 * of a process, and nothing else. wctmon's whole-process analysis is measured against it. */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static long slurp(const char* path) {
  char buf[1024];
  int fd = open(path, O_RDONLY);
  if (fd < 0) return 0;
  long n = read(fd, buf, sizeof(buf));
  close(fd);
  return n > 0 ? n : 0;
}

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: proc_floor PID\n");
    return 2;
  }
  char path[256];
  snprintf(path, sizeof(path), "/proc/%s/task", argv[1]);
  DIR* dir = opendir(path);
  if (dir == NULL) return 1;
  long bytes = 0, threads = 0;
  struct dirent* e;
  while ((e = readdir(dir)) != NULL) {
    if (e->d_name[0] == '.') continue;
    snprintf(path, sizeof(path), "/proc/%s/task/%s/stat", argv[1], e->d_name);
    bytes += slurp(path);
    snprintf(path, sizeof(path), "/proc/%s/task/%s/syscall", argv[1], e->d_name);
    bytes += slurp(path);
    ++threads;
  }
  closedir(dir);
  printf("%ld threads, %ld bytes\n", threads, bytes);
  return 0;
}
