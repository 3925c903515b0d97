#include "attnreg.h"
int main(void)
{
    return 0;
}
