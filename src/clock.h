/* The one clock of the library: monotonic seconds, and sleeping. */
#ifndef CLNET_CLOCK_H
#define CLNET_CLOCK_H

/* Seconds since an arbitrary start, monotonic. */
double clnet_now(void);
/* Sleeps s seconds (nothing for s <= 0), resuming after signals. */
void clnet_sleep(double s);

#endif
