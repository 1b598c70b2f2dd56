module nxvgopgo

go 1.26
