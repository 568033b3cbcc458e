/* SPDX-License-Identifier: MIT */
/* The library samples/dlopen_loop.py loads and unloads in a loop: a constructor, a destructor
 * and some code, so the loader has relocations, init and fini work to do each time. */
static volatile long counter;

__attribute__((constructor)) static void lib_init(void)
{
    for (int i = 0; i < 1000; i++)
        counter += i;
}

__attribute__((destructor)) static void lib_fini(void)
{
    for (int i = 0; i < 1000; i++)
        counter -= i;
}

long dlopen_lib_value(void)
{
    return counter;
}
